//! The database: options, catalog, clock and transaction table.

use crate::cc::{predicate, ssi};
use crate::error::{Error, Result};
use crate::gc::GcQueue;
use crate::options::{GcPolicy, Options, Protocol};
use crate::stats::{Counters, Stats};
use crate::storage::version::{Version, HEADER_BYTES};
use crate::table::{Table, TableInner};
use crate::txn::tid::TidTable;
use crate::txn::Transaction;
use crate::value::Schema;
use crossbeam_utils::CachePadded;
use parking_lot::RwLock;
use std::cell::Cell;
use std::collections::HashMap;
use std::sync::atomic::{fence, AtomicU64, Ordering::SeqCst};
use std::sync::Arc;
use std::time::Duration;

pub(crate) struct DbInner {
    /// Unique per database, so a table handle from another one is refused.
    pub id: u64,
    pub opts: Options,
    pub protocol: Protocol,
    /// The global timestamp counter: snapshots read it, commits bump it.
    pub clock: CachePadded<AtomicU64>,
    pub tids: TidTable,
    /// Tables by id. Dropped tables stay here (marked) so that transactions
    /// still holding pointers into them stay valid; they are freed with the
    /// database.
    pub tables: RwLock<Vec<Arc<TableInner>>>,
    pub names: RwLock<HashMap<String, u32>>,
    pub gc: GcQueue,
    /// Last garbage-collection horizon computed (a safe lower bound for new
    /// MVTO read-only snapshots while they register).
    pub horizon: AtomicU64,
    pub counters: Counters,
    /// SSI: SIREAD marks and writer states.
    pub ssi: ssi::Registry,
    /// Secondary indexes by name.
    pub indexes: crate::index::secondary::IndexCatalog,
}

/// An in-memory MVCC database. Cheap to clone; all clones share one engine.
#[derive(Clone)]
pub struct Database {
    pub(crate) inner: Arc<DbInner>,
}

impl Database {
    /// Opens an empty in-memory database, refusing invalid options.
    pub fn open(opts: Options) -> Result<Database> {
        opts.validate()?;
        let db = Database {
            inner: Arc::new(DbInner {
                id: NEXT_DB_ID.fetch_add(1, SeqCst),
                protocol: opts.protocol,
                tids: TidTable::new(opts.max_open_transactions),
                opts,
                clock: CachePadded::new(AtomicU64::new(1)),
                tables: RwLock::new(Vec::new()),
                names: RwLock::new(HashMap::new()),
                gc: GcQueue::default(),
                horizon: AtomicU64::new(0),
                counters: Counters::default(),
                ssi: ssi::Registry::new(),
                indexes: Default::default(),
            }),
        };
        if let (GcPolicy::TransactionLevel, Some(every)) =
            (db.inner.opts.gc, db.inner.opts.gc_interval)
        {
            spawn_gc_thread(Arc::downgrade(&db.inner), every)?;
        }
        Ok(db)
    }

    /// The options the database was opened with.
    pub fn options(&self) -> &Options {
        &self.inner.opts
    }

    /// Creates a table; fails on a duplicate name or an invalid schema.
    pub fn create_table(&self, schema: Schema) -> Result<Table> {
        let schema = schema.validate()?;
        let mut names = self.inner.names.write();
        if names.contains_key(&schema.name) {
            return Err(Error::Schema(format!(
                "table {} already exists",
                schema.name
            )));
        }
        let mut tables = self.inner.tables.write();
        let id =
            u32::try_from(tables.len()).map_err(|_| Error::Schema("too many tables".into()))?;
        let name = schema.name.clone();
        let t = Arc::new(TableInner::new(id, self.inner.id, schema));
        tables.push(Arc::clone(&t));
        names.insert(name, id);
        Ok(Table { inner: t })
    }

    /// Looks a table up by name.
    pub fn table(&self, name: &str) -> Result<Table> {
        let names = self.inner.names.read();
        let id = *names
            .get(name)
            .ok_or_else(|| Error::Schema(format!("no table named {name}")))?;
        Ok(Table {
            inner: Arc::clone(&self.inner.tables.read()[id as usize]),
        })
    }

    /// Names of all tables.
    pub fn table_names(&self) -> Vec<String> {
        let mut v: Vec<String> = self.inner.names.read().keys().cloned().collect();
        v.sort();
        v
    }

    /// Drops a table. Later operations through any handle to it fail with
    /// `Error::Schema`; its memory is released when the database is dropped.
    pub fn drop_table(&self, name: &str) -> Result<()> {
        let id = self
            .inner
            .names
            .write()
            .remove(name)
            .ok_or_else(|| Error::Schema(format!("no table named {name}")))?;
        self.inner.tables.read()[id as usize]
            .dropped
            .store(true, SeqCst);
        self.inner.indexes.forget_table(id);
        Ok(())
    }

    /// Begins a read-write transaction (serializable unless the protocol is SI).
    pub fn begin(&self) -> Result<Transaction> {
        Transaction::begin(Arc::clone(&self.inner), false)
    }

    /// Begins a read-only transaction: it reads a consistent snapshot, does
    /// no concurrency-control bookkeeping and never aborts.
    pub fn begin_read_only(&self) -> Result<Transaction> {
        Transaction::begin(Arc::clone(&self.inner), true)
    }

    /// Runs `f` in a transaction and commits it, retrying on conflicts with
    /// randomised exponential backoff (up to `Options::max_retries` times).
    /// Errors other than conflicts are returned at once (the transaction is
    /// rolled back).
    pub fn run<T>(&self, mut f: impl FnMut(&mut Transaction) -> Result<T>) -> Result<T> {
        let mut attempt = 0u32;
        loop {
            let mut txn = self.begin()?;
            let r = f(&mut txn).and_then(|v| txn.commit().map(|()| v));
            match r {
                Err(e) if e.is_retryable() && attempt < self.inner.opts.max_retries => {
                    attempt += 1;
                    backoff(attempt);
                }
                r => return r,
            }
        }
    }

    /// Runs one garbage-collection pass now (it also runs by itself every
    /// `Options::gc_every_commits` commits). Returns versions freed.
    pub fn collect_garbage(&self) -> u64 {
        self.inner.collect_garbage(true).unwrap_or(0)
    }

    /// Counters and a walk over every chain for memory figures. The walk is
    /// O(rows); call it between runs, not in a hot loop.
    pub fn stats(&self) -> Stats {
        let mut st = Stats::empty();
        self.inner.counters.fill(&mut st);
        st.open_transactions = self.inner.tids.open_count() as u64;
        let guard = crossbeam_epoch::pin();
        for t in self.inner.tables.read().iter() {
            if t.dropped.load(SeqCst) {
                continue;
            }
            st.indirection_bytes += t.rows.capacity_used() * 8;
            st.index_bytes += (t.index.len() * t.index.approx_entry_bytes()) as u64;
            let (entries, bytes) = crate::index::secondary::stats(t);
            st.secondary_index_entries += entries;
            st.secondary_index_bytes += bytes;
            t.rows.for_each_head(|_, head| {
                st.rows += 1;
                let mut len = 0;
                let mut v = head;
                while !v.is_null() {
                    // SAFETY: pinned; chain versions are freed only after being
                    // unlinked and an epoch passing.
                    let r: &Version = unsafe { &*v };
                    len += 1;
                    st.version_bytes += r.footprint() as u64;
                    st.header_bytes += HEADER_BYTES as u64;
                    v = r.next();
                }
                st.live_versions += len;
                st.longest_chain = st.longest_chain.max(len);
            });
        }
        drop(guard);
        st
    }
}

/// The GC epoch thread: a pass every `every`, until the database is gone.
/// It holds only a weak reference, so it never keeps a database alive.
fn spawn_gc_thread(db: std::sync::Weak<DbInner>, every: Duration) -> Result<()> {
    std::thread::Builder::new()
        .name("strata-gc".into())
        .spawn(move || loop {
            std::thread::sleep(every);
            match db.upgrade() {
                Some(db) => {
                    db.collect_garbage(false);
                }
                None => return,
            }
        })
        .map(drop)
        .map_err(|e| Error::Io(format!("cannot start the GC thread: {e}")))
}

fn backoff(attempt: u32) {
    // Randomised so that two transactions that keep colliding drift apart.
    let cap_us = 1u64 << attempt.min(10);
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos() as u64)
        .unwrap_or(7);
    let us = seed % cap_us;
    if us < 2 {
        std::thread::yield_now();
    } else {
        std::thread::sleep(Duration::from_micros(us));
    }
}

static NEXT_DB_ID: AtomicU64 = AtomicU64::new(1);

thread_local! {
    static COMMITS_SINCE_GC: Cell<u32> = const { Cell::new(0) };
}

impl DbInner {
    /// The garbage-collection horizon: no open transaction can see a version
    /// that a committed version at or below this timestamp overwrote.
    pub fn compute_horizon(&self) -> u64 {
        let g = self.clock.load(SeqCst);
        fence(SeqCst);
        let mut h = g.min(self.tids.min_begin(false));
        if self.protocol == Protocol::Mvto {
            // An MVTO writer with timestamp t may still commit versions at t,
            // so snapshots (and the horizon) must stay below it.
            h = h.min(self.tids.min_begin(true).saturating_sub(1));
        }
        h
    }

    /// One GC pass; with `wait`, waits for a pass already running instead of
    /// skipping (the explicit `Database::collect_garbage` waits).
    pub fn collect_garbage(&self, wait: bool) -> Option<u64> {
        if self.opts.gc == GcPolicy::None {
            return Some(0);
        }
        let h = self.compute_horizon();
        self.horizon.store(h, SeqCst);
        let tables = self.tables.read();
        let protocol = self.protocol;
        let may_remove = move |tomb: &Version, horizon: u64| match protocol {
            // Readers left their timestamp on the tombstone: it guards the
            // key against older inserters until they are all gone.
            Protocol::Mvto => tomb.word_a.load(SeqCst) <= horizon,
            // Read-locked tombstones stay until the lock is released.
            Protocol::Mv2pl => tomb.word_a.load(SeqCst) == 0,
            _ => true,
        };
        let freed = self.gc.collect(
            h,
            || self.clock.load(SeqCst),
            |id| tables.get(id as usize).cloned(),
            &may_remove,
            wait,
        )?;
        match self.protocol {
            Protocol::SiSsn => tables.iter().for_each(|t| predicate::prune(t, h)),
            Protocol::SiSsi => {
                tables.iter().for_each(|t| predicate::prune(t, h));
                self.ssi.prune(h);
            }
            _ => {}
        }
        let prune = matches!(self.protocol, Protocol::SiSsn | Protocol::SiSsi);
        // Stale-entry retries lock rows like a GC pass does: one at a time.
        let secondary = || {
            for t in tables.iter() {
                crate::index::secondary::after_gc_pass(t, h, prune);
            }
        };
        if wait {
            self.gc.paused(secondary);
        } else {
            self.gc.try_exclusive(secondary);
        }
        drop(tables);
        self.counters.gc_passes.fetch_add(1, SeqCst);
        self.counters.versions_reclaimed.fetch_add(freed, SeqCst);
        Some(freed)
    }

    /// Called after each read-write commit; runs GC every few commits.
    pub fn after_commit(&self) {
        let due = COMMITS_SINCE_GC.with(|c| {
            let n = c.get() + 1;
            if n >= self.opts.gc_every_commits {
                c.set(0);
                true
            } else {
                c.set(n);
                false
            }
        });
        if due {
            self.collect_garbage(false);
        }
    }
}

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Database")
            .field("options", &self.inner.opts)
            .finish()
    }
}
