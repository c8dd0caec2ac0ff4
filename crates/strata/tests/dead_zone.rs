//! `GcPolicy::DeadZone` (vDriver's dead-zone pruning, `gc::dead_zone`):
//! a long-lived reader keeps its own version of a row, not every version
//! written since it began; a GC pass keeps exactly the versions some live
//! snapshot reads (checked against a model, on every storage scheme); and
//! concurrent histories with long readers and the collector stay
//! serializable under every protocol.

use crate::common;
use crate::executor;

use common::{configs, counters_table, set_v};
use executor::StrataExecutor;
use proptest::prelude::*;
use std::collections::BTreeSet;
use strata::{key, Database, GcPolicy, Options, Protocol, Value, VersionStorage};

/// The periodic passes (here after every commit; never the explicit,
/// exhaustive one) look again at a row when a snapshot that pins one of its
/// versions ends, whichever of two readers ends first, and need no new
/// write of the row to do it: writes elsewhere (other rows) drive them.
#[test]
fn a_version_is_reclaimed_by_the_next_pass_after_its_last_reader_ends() {
    for first_ends_first in [true, false] {
        for c in configs()
            .storages()
            .gc(GcPolicy::DeadZone)
            .with(|o| o.gc_interval(None).gc_every_commits(1))
        {
            let db = Database::open(c.opts.clone()).unwrap();
            let t = counters_table(&db, 3);
            let first = db.begin_read_only().unwrap(); // reads v 0
            set_v(&db, &t, 1, 1);
            let second = db.begin_read_only().unwrap(); // reads v 1
            set_v(&db, &t, 1, 2);
            set_v(&db, &t, 2, 1); // a pass after the row's last write
            assert_eq!(db.stats().chain_lengths.get(&3), Some(&1), "{c}");
            let (a, b) = if first_ends_first {
                (first, second)
            } else {
                (second, first)
            };
            a.commit().unwrap();
            set_v(&db, &t, 2, 2); // a periodic pass: row 1 lost a reader
            if c.storage == VersionStorage::Siro {
                // A version dead while still SIRO's in-row previous one
                // (here row 2's, overwritten after both readers began,
                // read by neither) is left by the committers for the
                // writer that moves it out (first prune); a sweeping pass
                // (the GC thread's; here the explicit one) takes it if no
                // write comes.
                assert!(db.stats().chain_lengths.contains_key(&3), "{c}");
                db.collect_garbage();
            }
            assert_eq!(
                db.stats().chain_lengths.get(&3),
                None,
                "{c}: the version only the ended reader read is gone"
            );
            // Row 1 keeps its newest and the other reader's version; so does
            // row 2 (its first version, which both readers read).
            assert_eq!(db.stats().chain_lengths.get(&2), Some(&2), "{c}");
            b.commit().unwrap();
            set_v(&db, &t, 2, 3);
            if c.storage == VersionStorage::Siro {
                db.collect_garbage(); // the in-row leftovers, as above
            }
            assert_eq!(db.stats().longest_chain, 1, "{c}: both readers ended");
        }
    }
}

/// The scenario: one read-only transaction held open while 500
/// updates hit one row. A horizon collector keeps all 501 versions; dead
/// zones keep two (the reader's and the newest), on every storage scheme
/// and protocol, and the reader still reads its value.
#[test]
fn one_long_reader_pins_one_version_not_every_version_since() {
    for c in configs()
        .protocols()
        .storages()
        .gc(GcPolicy::DeadZone)
        .with(|o| o.gc_interval(None))
    {
        let db = Database::open(c.opts.clone()).unwrap();
        let t = counters_table(&db, 3);
        let mut llt = db.begin_read_only().unwrap();
        for v in 1..=500 {
            set_v(&db, &t, 1, v);
        }
        db.collect_garbage();
        let s = db.stats();
        assert_eq!(s.longest_chain, 2, "{c}");
        assert_eq!(s.live_versions, 3 + 1, "{c}");
        assert!(s.versions_pruned_in_dead_zones >= 498, "{c}: {s:?}");
        assert_eq!(
            llt.get(&t, &key![1]).unwrap().unwrap()[1],
            Value::Int(0),
            "{c}"
        );
        llt.commit().unwrap();
        db.collect_garbage();
        assert_eq!(db.stats().longest_chain, 1, "{c}: the reader ended");
        let mut now = db.begin_read_only().unwrap();
        assert_eq!(
            now.get(&t, &key![1]).unwrap().unwrap()[1],
            Value::Int(500),
            "{c}"
        );
    }
    // The same under the horizon collector: the chain grows with the updates
    // (what dead zones are for).
    let db = Database::open(Options::default().gc(GcPolicy::Vacuum).gc_interval(None)).unwrap();
    let t = counters_table(&db, 3);
    let _llt = db.begin_read_only().unwrap();
    for v in 1..=500 {
        set_v(&db, &t, 1, v);
    }
    db.collect_garbage();
    assert_eq!(db.stats().longest_chain, 501);
}

/// One step of the exactness model.
#[derive(Debug, Clone)]
enum Step {
    /// A read-only snapshot begins (and stays open).
    Begin,
    /// The `i`-th open snapshot (mod their number) ends.
    End(usize),
    /// Row `k` is updated and the update commits.
    Update(i64),
    /// Row `k` is updated and the writer aborts.
    Abort(i64),
    /// A garbage-collection pass, then the check.
    Collect,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        2 => Just(Step::Begin),
        2 => (0..8usize).prop_map(Step::End),
        6 => (0..ROWS).prop_map(Step::Update),
        1 => (0..ROWS).prop_map(Step::Abort),
        2 => Just(Step::Collect),
    ]
}

const ROWS: i64 = 3;

/// Runs `steps` on a database with `opts` against the model: each row's
/// committed values in order (`history[k]`, value = index) and each open
/// snapshot's view (how many values of each row it sees). After every
/// collection a pass has kept, for every row, exactly the newest version
/// and the ones some open snapshot reads; every open snapshot reads its
/// values.
fn run_model(opts: Options, steps: &[Step]) -> Result<(), TestCaseError> {
    let db = Database::open(opts.gc_interval(None)).unwrap();
    let t = counters_table(&db, ROWS);
    // Versions of row k so far: values 0, 1, ..., len - 1.
    let mut versions = vec![1usize; ROWS as usize];
    let mut open: Vec<(strata::Transaction, Vec<usize>)> = Vec::new();
    for s in steps {
        match *s {
            Step::Begin => open.push((db.begin_read_only().unwrap(), versions.clone())),
            Step::End(i) if !open.is_empty() => {
                let (x, _) = open.remove(i % open.len());
                x.commit().unwrap();
            }
            Step::End(_) => {}
            Step::Update(k) => {
                set_v(&db, &t, k, versions[k as usize] as i64);
                versions[k as usize] += 1;
            }
            Step::Abort(k) => {
                let mut x = db.begin().unwrap();
                x.update(&t, &key![k], &[("v", Value::Int(-1))]).unwrap();
                x.abort();
            }
            Step::Collect => {
                db.collect_garbage();
                let mut kept = 0;
                for (k, &n) in versions.iter().enumerate() {
                    let mut read: BTreeSet<usize> =
                        open.iter().map(|(_, seen)| seen[k] - 1).collect();
                    read.insert(n - 1);
                    kept += read.len();
                }
                let st = db.stats();
                prop_assert_eq!(st.live_versions, kept as u64, "steps {:?}", steps);
                for (x, seen) in open.iter_mut() {
                    for k in 0..ROWS {
                        let r = x.get(&t, &key![k]).unwrap().unwrap();
                        prop_assert_eq!(&r[1], &Value::Int(seen[k as usize] as i64 - 1));
                    }
                }
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Exactness (Theorem 3.5 both ways) on every storage scheme, under a
    /// snapshot protocol and under MVTO (whose read-only snapshots are
    /// drawn below running writers).
    #[test]
    fn a_pass_keeps_exactly_the_versions_live_snapshots_read(
        steps in proptest::collection::vec(step(), 1..60)
    ) {
        for c in configs()
            .protocols_where(|p| p == Protocol::Si || p == Protocol::Mvto)
            .storages()
            .gc(GcPolicy::DeadZone)
        {
            run_model(c.opts.clone(), &steps)?;
        }
    }
}

/// Concurrent writers, long readers and the collector (background passes
/// every few milliseconds and every few commits) under every protocol:
/// each long reader re-reads every register and must see exactly what it
/// saw first, and the writers' history must check as the protocol
/// promises (the `strata-verify` checker, as `tests/verify.rs` runs it).
#[test]
fn long_readers_and_the_collector_under_every_protocol() {
    long_readers_and_the_collector(VersionStorage::AppendNewToOld);
}

/// The same on SIRO storage (`storage::siro`): writers relocate versions
/// into segments and first-prune with the published zones while the
/// collector cuts dead segments and cleans chains under the readers.
#[test]
fn long_readers_and_the_collector_on_siro_under_every_protocol() {
    long_readers_and_the_collector(VersionStorage::Siro);
}

fn long_readers_and_the_collector(storage: VersionStorage) {
    use strata_verify::{run_workload, GeneratorConfig, Workload};
    // Every protocol that runs with dead zones (OCC refuses them).
    let valid = common::configs()
        .storage(storage)
        .gc(GcPolicy::DeadZone)
        .protocols();
    for p in valid.into_iter().map(|c| c.protocol) {
        let opts = Options::default()
            .protocol(p)
            .version_storage(storage)
            .siro(strata::SiroTuning {
                segment_bytes: 1024,
                hot_commits: 4,
                llt_commits: 20,
            })
            .gc(GcPolicy::DeadZone)
            .gc_every_commits(8)
            .gc_interval(Some(std::time::Duration::from_millis(2)));
        let exec = StrataExecutor::with_options(opts).unwrap();
        let cfg = GeneratorConfig {
            workload: Workload::Register,
            keys: 8,
            min_ops: 1,
            max_ops: 4,
            read_fraction: 0.5,
            delete_fraction: 0.0,
            scan_fraction: 0.2,
            max_scan_width: 4,
            limited_scan_fraction: 0.3,
            skew: 0.9,
            seed: 0xdead + p as u64,
            max_writes_per_key: GeneratorConfig::default().max_writes_per_key,
        };
        let stop = std::sync::atomic::AtomicBool::new(false);
        let history = std::thread::scope(|s| {
            let reader = s.spawn(|| {
                let mut rounds = 0u32;
                while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                    let mut x = exec.db.begin_read_only().unwrap();
                    let first = x.scan(&exec.registers, ..).unwrap();
                    // Hold the snapshot while the writers commit some
                    // transactions (however busy the machine), then run a
                    // pass ourselves, racing the writers and the
                    // background passes: it has versions in a dead zone
                    // above our snapshot to prune.
                    let commits = || exec.db.stats().commits;
                    let since = commits();
                    let deadline =
                        std::time::Instant::now() + std::time::Duration::from_millis(500);
                    while commits() < since + 40
                        && std::time::Instant::now() < deadline
                        && !stop.load(std::sync::atomic::Ordering::SeqCst)
                    {
                        std::thread::sleep(std::time::Duration::from_micros(300));
                        assert_eq!(x.scan(&exec.registers, ..).unwrap(), first, "{p}");
                    }
                    exec.db.collect_garbage();
                    assert_eq!(x.scan(&exec.registers, ..).unwrap(), first, "{p}");
                    x.commit().unwrap();
                    rounds += 1;
                }
                rounds
            });
            // STRATA_SOAK=<n> runs n times the transactions.
            let soak = common::soak() as usize;
            let h = run_workload(&exec, &cfg, 3, 2_000 * soak);
            stop.store(true, std::sync::atomic::Ordering::SeqCst);
            assert!(reader.join().unwrap() > 0, "{p}: the long reader ran");
            h
        });
        if let Some(failure) = exec.failure() {
            panic!("{storage} {p}: {failure}");
        }
        let report = common::check_history(&history);
        eprintln!(
            "{storage} {p}: {report}; {} pruned in dead zones; {:?}",
            exec.db.stats().versions_pruned_in_dead_zones,
            exec.db.stats().siro
        );
        if p.is_serializable() {
            assert!(
                report.is_valid(),
                "{storage} {p} under dead-zone GC:\n{report}"
            );
        } else {
            assert!(
                !report.violates_snapshot_isolation(),
                "{storage} {p}:\n{report}"
            );
        }
        assert!(
            exec.db.stats().versions_pruned_in_dead_zones > 0,
            "{p}: nothing was pruned in a dead zone; the test checks little"
        );
        if storage == VersionStorage::Siro {
            let st = exec.db.stats().siro;
            assert!(
                st.relocated.iter().sum::<u64>() > 0,
                "{p}: nothing went off-row; the test checks little: {st:?}"
            );
        }
    }
}
