//! Crash tests: a child process (this test binary, running the ignored test
//! `crash_child`) runs bank transfers and list appends on a durable
//! database and prints every acknowledged commit; the parent kills it with
//! SIGKILL at a random moment, reopens the directory, and checks:
//!
//! * GroupCommit: every acknowledged commit is there; also with pipelined
//!   commits (`Database::run_pipelined`, eight in flight per thread), where
//!   a commit is acknowledged once its ticket's wait returns;
//! * Async: at most `ASYNC_UNFLUSHED` bytes of acknowledged commits are
//!   lost (the structural bound, `LogTuning::async_max_unflushed_bytes`,
//!   checked as a count: lost commits x the smallest record), and every
//!   commit acknowledged more than `ASYNC_CHECK_AGE` before the kill is
//!   there (the time bound is max(flush interval, one flush) plus one flush,
//!   about 12 ms, while the flusher gets a core; the test allows for a
//!   loaded machine);
//! * GroupCommit (both ways): every list content a read-only commit
//!   acknowledged is a prefix of the recovered list (a reader that saw an
//!   append still waiting for its fsync waited for it too);
//! * both: no partial transaction (each transfer's row exists exactly when
//!   both balance changes do, so every balance equals 1000 plus its
//!   recorded transfers, and the total holds), and each list is a prefix of
//!   its acknowledged appends, in order, with no duplicates.
//!
//! Rounds accumulate in one directory, so later rounds recover logs and
//! checkpoints written (and torn) by earlier ones; small segments and
//! checkpoint thresholds make rotations and checkpoints frequent.
//! `STRATA_SOAK=<n>` multiplies the rounds.

use crate::common::soak;
use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use strata::{
    key, row, Database, Durability, Error, LogTuning, Options, Schema, SyncPolicy, Table, Type,
    Value,
};

const ENV_DIR: &str = "STRATA_CRASH_DIR";
const ENV_SYNC: &str = "STRATA_CRASH_SYNC";
const ENV_ROUND: &str = "STRATA_CRASH_ROUND";
const ACCOUNTS: i64 = 16;
const LISTS: i64 = 8;
/// Commits a child thread keeps in flight in the pipelined mode.
const PIPELINE: usize = 8;
const ASYNC_CHECK_AGE: Duration = Duration::from_secs(1);
/// `async_max_unflushed_bytes` of the child.
const ASYNC_UNFLUSHED: u64 = 16 << 10;
/// No commit record is smaller: a 32-byte header and at least one 8-byte
/// word of payload.
const MIN_RECORD: u64 = 40;

fn options(dir: &Path, sync: SyncPolicy) -> Options {
    Options::default()
        .durability(Durability::Wal {
            dir: dir.to_path_buf(),
            sync,
        })
        .log_tuning(LogTuning {
            segment_bytes: 16 << 10,
            checkpoint_every_bytes: Some(48 << 10),
            async_max_unflushed_bytes: ASYNC_UNFLUSHED,
            ..LogTuning::default()
        })
}

fn table(db: &Database, s: Schema) -> Table {
    let name = s.name.clone();
    db.table(&name)
        .or_else(|_| db.create_table(s))
        .expect("table")
}

fn tables(db: &Database) -> (Table, Table, Table) {
    let accounts = table(
        db,
        Schema::new("accounts")
            .column("id", Type::Int)
            .column("balance", Type::Int)
            .primary_key(&["id"]),
    );
    let transfers = table(
        db,
        Schema::new("transfers")
            .column("id", Type::Int)
            .column("from", Type::Int)
            .column("to", Type::Int)
            .column("amount", Type::Int)
            .primary_key(&["id"]),
    );
    let lists = table(
        db,
        Schema::new("lists")
            .column("k", Type::Int)
            .column("items", Type::Text)
            .primary_key(&["k"]),
    );
    (accounts, transfers, lists)
}

struct Rng(u64);
impl Rng {
    fn new(seed: u64) -> Self {
        Rng(seed | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
}

/// The workload the parent kills. Run on its own (`--ignored`) it fails
/// with a message: without the parent's directory, mode and round it would
/// test nothing, and a pass would say otherwise.
#[test]
#[ignore = "the child process of the crash tests; they run it"]
fn crash_child() {
    let env = |name: &str| {
        std::env::var(name).unwrap_or_else(|_| {
            panic!(
                "crash_child is the child process of the crash tests, which set {ENV_DIR}, \
                 {ENV_SYNC} and {ENV_ROUND} and kill it; {name} is not set. Run the crash \
                 tests instead: cargo test -p strata --test integration crash::"
            )
        })
    };
    let dir = env(ENV_DIR);
    let mode = env(ENV_SYNC);
    let sync = match mode.as_str() {
        "async" => SyncPolicy::Async,
        "group" | "pipelined" => SyncPolicy::GroupCommit,
        other => panic!("{ENV_SYNC}={other:?}: expected async, group or pipelined"),
    };
    // Group commit with pipelined commits: each thread keeps up to
    // `PIPELINE` commits in flight and acknowledges the oldest once its
    // ticket's wait returns.
    let pipelined = mode == "pipelined";
    let round: i64 = env(ENV_ROUND)
        .parse()
        .unwrap_or_else(|e| panic!("{ENV_ROUND} is not a number: {e}"));
    let db = Database::open(options(Path::new(&dir), sync)).expect("child open");
    let (accounts, transfers, lists) = tables(&db);
    db.run(|t| {
        if t.get(&accounts, &key![0])?.is_none() {
            for a in 0..ACCOUNTS {
                t.insert(&accounts, row![a, 1000])?;
            }
        }
        Ok(())
    })
    .unwrap();
    println!("READY");
    let threads: Vec<_> = (0..2i64)
        .map(|th| {
            let (db, accounts, transfers, lists) = (
                db.clone(),
                accounts.clone(),
                transfers.clone(),
                lists.clone(),
            );
            std::thread::spawn(move || {
                let mut rng = Rng::new(seed() + th as u64);
                let mut in_flight = std::collections::VecDeque::new();
                let mut commit =
                    |body: &mut dyn FnMut(&mut strata::Transaction) -> strata::Result<()>,
                     ack: String| {
                        if pipelined {
                            let ((), ticket) = db.run_pipelined(&mut *body).unwrap();
                            in_flight.push_back((ticket, ack));
                            if in_flight.len() >= PIPELINE {
                                let (ticket, ack) = in_flight.pop_front().unwrap();
                                ticket.wait().unwrap();
                                println!("{ack}");
                            }
                        } else {
                            db.run(&mut *body).unwrap();
                            println!("{ack}");
                        }
                    };
                for i in 0.. {
                    let id = round * 100_000_000 + th * 10_000_000 + i;
                    if rng.below(2) == 0 {
                        let from = rng.below(ACCOUNTS as u64) as i64;
                        let to = (from + 1 + rng.below(ACCOUNTS as u64 - 1) as i64) % ACCOUNTS;
                        let amount = 1 + rng.below(50) as i64;
                        commit(
                            &mut |t| {
                                let bal = |t: &mut strata::Transaction,
                                           a: i64|
                                 -> strata::Result<i64> {
                                    Ok(t.get(&accounts, &key![a])?.unwrap()[1].as_int().unwrap())
                                };
                                let (bf, bt) = (bal(t, from)?, bal(t, to)?);
                                t.update(
                                    &accounts,
                                    &key![from],
                                    &[("balance", Value::Int(bf - amount))],
                                )?;
                                t.update(
                                    &accounts,
                                    &key![to],
                                    &[("balance", Value::Int(bt + amount))],
                                )?;
                                t.insert(&transfers, row![id, from, to, amount])
                            },
                            format!("T {id}"),
                        );
                    } else {
                        let k = rng.below(LISTS as u64) as i64;
                        commit(
                            &mut |t| match t.get(&lists, &key![k])? {
                                Some(r) => {
                                    let items = format!("{}{id},", r[1].as_text().unwrap());
                                    t.update(&lists, &key![k], &[("items", Value::from(items))])
                                }
                                None => t.insert(&lists, row![k, format!("{id},")]),
                            },
                            format!("A {k} {id}"),
                        );
                    }
                }
            })
        })
        .collect();
    // A reader of the lists (not under Async, which acknowledges before
    // durability by design): each read-only commit acknowledges what it
    // read, which must survive, appends by the other threads that were
    // still waiting for their fsync included.
    let reader = (mode != "async").then(|| {
        std::thread::spawn(move || {
            let mut rng = Rng::new(seed() + 7);
            loop {
                let k = rng.below(LISTS as u64) as i64;
                let mut ro = db.begin_read_only().unwrap();
                let items = ro
                    .get(&lists, &key![k])
                    .unwrap()
                    .map(|r| r[1].as_text().unwrap().to_string());
                ro.commit().unwrap();
                if let Some(items) = items {
                    println!("R {k} {items}");
                }
                std::thread::sleep(Duration::from_micros(200));
            }
        })
    });
    for h in threads.into_iter().chain(reader) {
        h.join().unwrap();
    }
}

/// What the parent saw acknowledged, with when it read each line.
#[derive(Default)]
struct Acked {
    transfers: Vec<(i64, Instant)>,
    appends: HashMap<i64, Vec<(i64, Instant)>>,
    /// Per list, the longest content a reader's commit acknowledged (a
    /// list only grows, so it covers the shorter ones).
    reads: HashMap<i64, Vec<i64>>,
}

fn run_child(dir: &Path, sync: &str, round: u32, rng: &mut Rng, acked: &mut Acked) -> Instant {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["crash::crash_child", "--exact", "--nocapture", "--ignored"])
        .env(ENV_DIR, dir)
        .env(ENV_SYNC, sync)
        .env(ENV_ROUND, round.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn the child");
    let out = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(out).lines() {
            let Ok(line) = line else { break };
            if tx.send((line, Instant::now())).is_err() {
                break;
            }
        }
    });
    // Wait for the child to be up (recovery included), then let it run.
    let up = Instant::now() + Duration::from_secs(60);
    let mut lines = Vec::new();
    loop {
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok((l, t)) => {
                let ready = l == "READY";
                lines.push((l, t));
                if ready {
                    break;
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) if Instant::now() < up => {}
            Err(_) => {
                let _ = child.kill();
                panic!("the child did not start (round {round}): {lines:?}");
            }
        }
    }
    std::thread::sleep(Duration::from_millis(50 + rng.below(500)));
    let killed_at = Instant::now();
    child.kill().expect("SIGKILL"); // SIGKILL on Unix
    child.wait().unwrap();
    reader.join().unwrap();
    lines.extend(rx.try_iter());
    for (l, t) in lines {
        let f: Vec<&str> = l.split_whitespace().collect();
        match f.as_slice() {
            ["T", id] => acked.transfers.push((id.parse().unwrap(), t)),
            ["A", k, id] => acked
                .appends
                .entry(k.parse().unwrap())
                .or_default()
                .push((id.parse().unwrap(), t)),
            ["R", k, items] => {
                let items: Vec<i64> = items
                    .split_terminator(',')
                    .map(|s| s.parse().unwrap())
                    .collect();
                let seen = acked.reads.entry(k.parse().unwrap()).or_default();
                if items.len() > seen.len() {
                    *seen = items;
                }
            }
            _ => {}
        }
    }
    killed_at
}

/// Checks the recovered database against what was acknowledged. `must`
/// says whether an acknowledged commit read at a given time must survive.
/// Returns how many acknowledged commits were lost.
fn check(dir: &Path, acked: &Acked, must: impl Fn(Instant) -> bool, round: u32) -> u64 {
    let db = match Database::open(options(dir, SyncPolicy::GroupCommit)) {
        Ok(db) => db,
        Err(e @ Error::Corrupt(_)) => panic!("round {round}: recovery refused: {e}"),
        Err(e) => panic!("round {round}: {e}"),
    };
    let (accounts, transfers, lists) = tables(&db);
    let mut ro = db.begin_read_only().unwrap();
    let mut expect: HashMap<i64, i64> = (0..ACCOUNTS).map(|a| (a, 1000)).collect();
    let mut present = HashSet::new();
    for r in ro.scan(&transfers, ..).unwrap() {
        let (id, from, to, amt) = (
            r[0].as_int().unwrap(),
            r[1].as_int().unwrap(),
            r[2].as_int().unwrap(),
            r[3].as_int().unwrap(),
        );
        present.insert(id);
        *expect.get_mut(&from).unwrap() -= amt;
        *expect.get_mut(&to).unwrap() += amt;
    }
    let accts = ro.scan(&accounts, ..).unwrap();
    if !accts.is_empty() {
        assert_eq!(accts.len() as i64, ACCOUNTS, "round {round}: accounts");
        let mut total = 0;
        for r in &accts {
            let (a, b) = (r[0].as_int().unwrap(), r[1].as_int().unwrap());
            total += b;
            assert_eq!(
                b, expect[&a],
                "round {round}: account {a} disagrees with its recorded transfers (partial transaction)"
            );
        }
        assert_eq!(total, ACCOUNTS * 1000, "round {round}: bank total");
    }
    let mut lost = 0;
    for (id, t) in &acked.transfers {
        if !present.contains(id) {
            assert!(!must(*t), "round {round}: acknowledged transfer {id} lost");
            lost += 1;
        }
    }
    let mut recovered: HashMap<i64, Vec<i64>> = HashMap::new();
    for r in ro.scan(&lists, ..).unwrap() {
        let items: Vec<i64> = r[1]
            .as_text()
            .unwrap()
            .split_terminator(',')
            .map(|s| s.parse().unwrap())
            .collect();
        let set: HashSet<_> = items.iter().collect();
        assert_eq!(
            set.len(),
            items.len(),
            "round {round}: duplicate list items"
        );
        recovered.insert(r[0].as_int().unwrap(), items);
    }
    for (k, appends) in &acked.appends {
        let items = recovered.get(k).cloned().unwrap_or_default();
        let pos: HashMap<i64, usize> = items.iter().enumerate().map(|(i, &v)| (v, i)).collect();
        // Per child thread (the id says which), acknowledged appends found
        // must be in acknowledgement order and form a prefix of them (no
        // holes); required ones must be found. Across threads the printing
        // order is not the commit order.
        let mut last: HashMap<i64, usize> = HashMap::new();
        let mut missing: HashSet<i64> = HashSet::new();
        for (id, t) in appends {
            let thread = id / 10_000_000;
            match pos.get(id) {
                Some(&p) => {
                    assert!(
                        !missing.contains(&thread),
                        "round {round}: list {k}: {id} survived an earlier lost append"
                    );
                    assert!(
                        last.get(&thread).is_none_or(|&l| l < p),
                        "round {round}: list {k}: {id} out of order"
                    );
                    last.insert(thread, p);
                }
                None => {
                    assert!(
                        !must(*t),
                        "round {round}: acknowledged append {id} to list {k} lost"
                    );
                    missing.insert(thread);
                    lost += 1;
                }
            }
        }
    }
    for (k, read) in &acked.reads {
        let items = recovered.get(k).map(Vec::as_slice).unwrap_or_default();
        let tail = |v: &[i64]| v[v.len().saturating_sub(3)..].to_vec();
        assert!(
            items.starts_with(read),
            "round {round}: list {k}: a reader acknowledged {} items ending {:?}, \
             recovered {} ending {:?}",
            read.len(),
            tail(read),
            items.len(),
            tail(items)
        );
    }
    drop(ro);
    lost
}

fn crash_rounds(sync: &str, rounds: u32) {
    let dir: PathBuf =
        std::env::temp_dir().join(format!("strata-crash-{sync}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut rng = Rng::new(seed());
    let mut acked = Acked::default();
    let mut torn = 0;
    let mut most_lost = 0;
    for round in 0..rounds {
        let killed_at = run_child(&dir, sync, round, &mut rng, &mut acked);
        let must = |t: Instant| match sync {
            "async" => killed_at.duration_since(t) > ASYNC_CHECK_AGE,
            _ => true,
        };
        let lost = check(&dir, &acked, must, round);
        assert!(
            lost <= ASYNC_UNFLUSHED / MIN_RECORD,
            "round {round}: {lost} acknowledged commits lost, more than {ASYNC_UNFLUSHED} bytes allow"
        );
        most_lost = most_lost.max(lost);
        let db = Database::open(options(&dir, SyncPolicy::GroupCommit)).unwrap();
        torn += db.recovery_report().unwrap().torn_tail.is_some() as u32;
        // In Async mode, what survived is now durable; later rounds check
        // survivors strictly (and forget the lost ones).
        if sync == "async" {
            let (_, transfers, _) = tables(&db);
            let mut ro = db.begin_read_only().unwrap();
            let have: HashSet<i64> = ro
                .scan(&transfers, ..)
                .unwrap()
                .iter()
                .map(|r| r[0].as_int().unwrap())
                .collect();
            acked.transfers.retain(|(id, _)| have.contains(id));
            let lists = db.table("lists").unwrap();
            for (k, v) in acked.appends.iter_mut() {
                let items = ro
                    .get(&lists, &key![*k])
                    .unwrap()
                    .map(|r| r[1].as_text().unwrap().to_string())
                    .unwrap_or_default();
                let have: HashSet<i64> = items
                    .split_terminator(',')
                    .map(|s| s.parse().unwrap())
                    .collect();
                v.retain(|(id, _)| have.contains(id));
                for (_, t) in v.iter_mut() {
                    *t = killed_at - 2 * ASYNC_CHECK_AGE;
                }
            }
            for (_, t) in acked.transfers.iter_mut() {
                *t = killed_at - 2 * ASYNC_CHECK_AGE;
            }
        }
    }
    let n = acked.transfers.len() + acked.appends.values().map(Vec::len).sum::<usize>();
    eprintln!(
        "{sync}: {rounds} rounds, {n} acknowledged commits checked, {torn} torn tails cut, \
         at most {most_lost} acknowledged commits lost in a round, {} lists' reads checked",
        acked.reads.len()
    );
    assert!(n > 0, "the child committed nothing");
    assert!(
        sync == "async" || !acked.reads.is_empty(),
        "the child's reader acknowledged nothing"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn group_commit_survives_sigkill_with_every_acknowledged_commit() {
    crash_rounds("group", 20 * soak());
}

/// Pipelined commits under group commit: every commit whose ticket's wait
/// returned (and only those are acknowledged) survives.
#[test]
fn pipelined_commits_survive_sigkill_once_their_tickets_wait() {
    crash_rounds("pipelined", 10 * soak());
}

#[test]
fn async_survives_sigkill_atomically_within_the_loss_bound() {
    crash_rounds("async", 8 * soak());
}
