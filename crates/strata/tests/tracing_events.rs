//! The engine's `tracing` events (`trace.rs`), seen by a subscriber of the
//! test's own: commits with their writes and outcome, aborts with their
//! reason, GC passes, checkpoints and recovery; nothing for a read-only
//! commit.
//!
//! A binary of its own: in the shared integration binary, other tests'
//! threads hit the engine's call sites while this test's subscriber was
//! being registered, and a call site could keep "no interest" (the test
//! saw no events in 3 runs of 3 there, and passed alone).

mod common;
use common::{kv_table, TestDir};
use std::sync::{Arc, Mutex};
use strata::{key, row, Database, Durability, Options, Protocol, SyncPolicy, Value};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

/// One event: its target, message and fields (as text).
#[derive(Debug, Clone)]
struct Seen {
    target: String,
    message: String,
    fields: Vec<(String, String)>,
}

impl Seen {
    fn field(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Records every event of this thread.
#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<Seen>>>);

struct Fields(Vec<(String, String)>, String);

impl Visit for Fields {
    fn record_debug(&mut self, f: &Field, v: &dyn std::fmt::Debug) {
        let v = format!("{v:?}");
        if f.name() == "message" {
            self.1 = v;
        } else {
            self.0
                .push((f.name().to_string(), v.trim_matches('"').to_string()));
        }
    }
}

impl Subscriber for Recorder {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, e: &Event<'_>) {
        let mut f = Fields(Vec::new(), String::new());
        e.record(&mut f);
        self.0.lock().unwrap().push(Seen {
            target: e.metadata().target().to_string(),
            message: f.1,
            fields: f.0,
        });
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

impl Recorder {
    fn take(&self, target: &str) -> Vec<Seen> {
        let mut all = self.0.lock().unwrap();
        let (ours, rest): (Vec<Seen>, Vec<Seen>) = all.drain(..).partition(|s| s.target == target);
        *all = rest;
        ours
    }
}

#[test]
fn commits_aborts_gc_checkpoints_and_recovery_are_traced() {
    let d = TestDir::new("strata-tracing");
    let opts = Options::default()
        .protocol(Protocol::Si)
        .durability(Durability::Wal {
            dir: d.to_path_buf(),
            sync: SyncPolicy::GroupCommit,
        })
        // GC only when asked, on this thread (the recorder is this thread's).
        .gc_interval(None)
        .gc_every_commits(u32::MAX);
    let rec = Recorder::default();
    tracing::subscriber::with_default(rec.clone(), || {
        let db = Database::open(opts.clone()).unwrap();
        let t = kv_table(&db);
        db.run(|x| x.insert(&t, row![1, 10, "a"])).unwrap();
        let commits = rec.take("strata::commit");
        assert_eq!(commits.len(), 1, "{commits:?}");
        assert_eq!(commits[0].field("writes"), Some("1"));
        assert_eq!(commits[0].field("outcome"), Some("committed"));
        assert!(commits[0].field("micros").is_some());

        // A read-only commit, and a read-write one that wrote nothing: no event.
        let mut ro = db.begin_read_only().unwrap();
        ro.get(&t, &key![1]).unwrap();
        ro.commit().unwrap();
        let mut rw = db.begin().unwrap();
        rw.get(&t, &key![1]).unwrap();
        rw.commit().unwrap();
        assert!(rec.take("strata::commit").is_empty());

        // A conflict and a user abort, each with its reason.
        let mut a = db.begin().unwrap();
        let mut b = db.begin().unwrap();
        a.update(&t, &key![1], &[("v", Value::Int(11))]).unwrap();
        assert!(b.update(&t, &key![1], &[("v", Value::Int(12))]).is_err());
        drop(b); // (rolled back already: no second event)
        a.commit().unwrap();
        let mut c = db.begin().unwrap();
        c.update(&t, &key![1], &[("v", Value::Int(13))]).unwrap();
        c.abort();
        let reasons: Vec<String> = rec
            .take("strata::abort")
            .iter()
            .map(|s| s.field("reason").unwrap().to_string())
            .collect();
        assert_eq!(reasons, ["write-write", "user"]);

        // A GC pass that frees the overwritten versions.
        db.collect_garbage();
        let gc = rec.take("strata::gc");
        assert!(
            gc.iter()
                .any(|s| s.field("freed_bytes").is_some_and(|b| b != "0")),
            "{gc:?}"
        );

        db.checkpoint().unwrap();
        let log = rec.take("strata::log");
        assert!(
            log.iter()
                .any(|s| s.message == "checkpoint" && s.field("rows").is_some()),
            "{log:?}"
        );
        drop(db);
        let db = Database::open(opts.clone()).unwrap();
        let log = rec.take("strata::log");
        assert!(
            log.iter()
                .any(|s| s.message == "recovered" && s.field("report").is_some()),
            "{log:?}"
        );
        drop(db);
    });
}
