//! The engine used the way a small service would: a durable database
//! opened or created on start (`open_table`), worker threads moving money
//! with retries and an error type of their own (`try_run`), a read-only
//! report read through a lazy iterator (`run_read_only`, `range`), an
//! online backup taken while the workers run (`Database::backup`), and a
//! restart that finds every acknowledged commit. CI runs it (`.ci/run`); it exits non-zero if the books do not
//! balance.
//!
//! `cargo run -p strata --release --example service [DIR]`

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use strata::{key, row, Database, Durability, Options, Schema, SyncPolicy, Table, Type, Value};

const ACCOUNTS: i64 = 100;
const OPENING: i64 = 1_000;
const TRANSFERS_PER_WORKER: u64 = 2_000;

/// The service's own errors: a business refusal, or the engine's.
#[derive(Debug)]
enum AppError {
    Insufficient { account: i64, balance: i64 },
    Db(strata::Error),
}

impl From<strata::Error> for AppError {
    fn from(e: strata::Error) -> Self {
        AppError::Db(e)
    }
}

fn open(dir: &std::path::Path) -> strata::Result<(Database, Table)> {
    let db = Database::open(Options::default().durability(Durability::Wal {
        dir: dir.to_path_buf(),
        sync: SyncPolicy::GroupCommit,
    }))?;
    let accounts = db.open_table(
        Schema::new("accounts")
            .column("id", Type::Int)
            .column("balance", Type::Int)
            .primary_key(&["id"]),
    )?;
    Ok((db, accounts))
}

/// Moves `amount` from `from` to `to`; refused (and rolled back, not
/// retried) if `from` would go below zero.
fn transfer(db: &Database, t: &Table, from: i64, to: i64, amount: i64) -> Result<(), AppError> {
    db.try_run(|x| {
        let balance: i64 = t.value(&x.get(t, &key![from])?.expect("an account"), "balance")?;
        if balance < amount {
            return Err(AppError::Insufficient {
                account: from,
                balance,
            });
        }
        let other: i64 = t.value(&x.get(t, &key![to])?.expect("an account"), "balance")?;
        x.update(t, &key![from], &[("balance", Value::Int(balance - amount))])?;
        x.update(t, &key![to], &[("balance", Value::Int(other + amount))])?;
        Ok(())
    })
}

fn total(db: &Database, t: &Table) -> strata::Result<i64> {
    // Lazily, a row at a time: the snapshot never holds the table twice.
    db.run_read_only(|x| {
        x.range(t, ..)?
            .try_fold(0, |sum, r| Ok(sum + r?[1].as_int().unwrap_or(0)))
    })
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let base = std::env::args_os()
        .nth(1)
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::env::temp_dir().join(format!("strata-service-{}", std::process::id()))
        });
    let (dir, backup) = (base.join("db"), base.join("backup"));
    let _ = std::fs::remove_dir_all(&base);
    let (db, accounts) = open(&dir)?;
    for id in 0..ACCOUNTS {
        db.run(|x| x.put(&accounts, row![id, OPENING]))?;
    }
    let refused = Arc::new(AtomicU64::new(0));
    let workers: Vec<_> = (0..4)
        .map(|w| {
            let (db, t, refused) = (db.clone(), accounts.clone(), Arc::clone(&refused));
            std::thread::spawn(move || -> Result<(), String> {
                for i in 0..TRANSFERS_PER_WORKER as i64 {
                    let from = (i * 31 + w * 7) % ACCOUNTS;
                    let to = (i * 17 + w * 3 + 1) % ACCOUNTS;
                    if from == to {
                        continue;
                    }
                    match transfer(&db, &t, from, to, 1 + i % 50) {
                        Ok(()) => {}
                        Err(AppError::Insufficient { account, balance }) => {
                            // Refused on what it read, rolled back.
                            assert!(account == from && balance >= 0);
                            refused.fetch_add(1, Relaxed);
                        }
                        Err(AppError::Db(e)) => return Err(e.to_string()),
                    }
                }
                Ok(())
            })
        })
        .collect();
    // A backup while the workers run.
    let report = db.backup(&backup)?;
    for h in workers {
        h.join().expect("a worker panicked")?;
    }
    let books = total(&db, &accounts)?;
    drop(db);
    // Restart: every acknowledged transfer is there, and the books balance.
    let (db, accounts) = open(&dir)?;
    let after_restart = total(&db, &accounts)?;
    let (copy, copy_accounts) = open(&backup)?;
    let in_backup = total(&copy, &copy_accounts)?;
    println!(
        "backup: {} rows, {} log bytes; refused transfers: {}; totals: live {books}, after restart {after_restart}, backup {in_backup}",
        report.rows,
        report.log_bytes,
        refused.load(Relaxed)
    );
    let want = ACCOUNTS * OPENING;
    if books != want || after_restart != want || in_backup != want {
        return Err(format!("the books do not balance (want {want})").into());
    }
    drop((db, copy));
    let _ = std::fs::remove_dir_all(&base);
    Ok(())
}
