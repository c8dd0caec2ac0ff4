//! Secondary-index DDL: `Database::create_index` and `drop_index`.
//!
//! ```text
//!  create_index ──> publish to writers ──> wait for older writers
//!               ──> back-fill (GC paused) ──> re-check uniqueness
//!               ──> log CreateIndex ──> visible to readers
//! ```
//!
//! The index structures and the entry schemes are `index`'s; this module
//! owns the order of the steps above (see `index::secondary`'s module doc for
//! why each is needed) and the catalog and log records of an index.

use super::{Database, DbInner};
use crate::error::{Error, Result};
use crate::index::secondary::{SecondaryIndex, Unique};
use crate::index::{with_index_kind, SecondaryIndexKind};
use crate::log::record::CatalogRecord;
use crate::options::IndexKind;
use crate::table::Index;
use crate::table::{Table, TableInner};
use std::sync::atomic::Ordering::SeqCst;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long `create_index` waits for read-write transactions that began
/// before it (they must end before the back-fill).
const BACKFILL_WAIT: Duration = Duration::from_secs(10);

impl Database {
    /// Creates a secondary index on `columns` of `table`. Works on populated
    /// tables: writers may keep running (see the module doc of
    /// `index::secondary`); read-write transactions that began before the
    /// call must finish first (the call waits up to 10 s for them, then
    /// fails with `Error::Misuse`). A unique index over rows that already
    /// share a key fails with `Error::DuplicateKey` and is not created.
    ///
    /// ```
    /// use strata::{key, row, Database, Error, Options, Schema, Type, Unique};
    ///
    /// let db = Database::open(Options::default())?;
    /// let c = db.create_table(
    ///     Schema::new("customer")
    ///         .column("w", Type::Int)
    ///         .column("id", Type::Int)
    ///         .column("last", Type::Text)
    ///         .column("email", Type::Text)
    ///         .primary_key(&["w", "id"]),
    /// )?;
    /// db.run(|t| {
    ///     t.insert(&c, row![1, 1, "BAR", "a@x"])?;
    ///     t.insert(&c, row![1, 2, "ABLE", "b@x"])?;
    ///     t.insert(&c, row![1, 3, "BAR", "c@x"])
    /// })?;
    /// let by_last = db.create_index("by_last", &c, &["w", "last"], Unique::No)?;
    /// let _by_email = db.create_index("by_email", &c, &["email"], Unique::Yes)?;
    ///
    /// let mut txn = db.begin()?;
    /// let bars = txn.index_get(&by_last, &key![1, "BAR"])?; // ties by primary key
    /// let ids: Vec<i64> = bars.iter().map(|r| r[1].as_int().unwrap()).collect();
    /// assert_eq!(ids, [1, 3]);
    /// assert_eq!(txn.index_scan(&by_last, key![1]..=key![1])?.len(), 3); // a prefix
    /// let dup = txn.insert(&c, row![1, 4, "CALLY", "a@x"]);
    /// assert!(matches!(dup, Err(Error::DuplicateKey { .. })));
    /// txn.commit()?;
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn create_index(
        &self,
        name: &str,
        table: &Table,
        columns: &[&str],
        unique: Unique,
    ) -> Result<Index> {
        self.create_index_as(name, table, columns, unique, IndexKind::Standard)
    }

    /// [`Database::create_index`] with the index's structure chosen:
    /// `IndexKind::Standard` (the database's pointer scheme, as
    /// `create_index`) or `IndexKind::MvPbt`, a multi-version partitioned
    /// B-tree whose scans decide visibility from the index alone (see
    /// `index::mvpbt`). Kinds mix freely on one table.
    ///
    /// ```
    /// use strata::{key, row, Database, IndexKind, Options, Schema, Type, Unique, Value};
    ///
    /// let db = Database::open(Options::default())?;
    /// let t = db.create_table(
    ///     Schema::new("item").column("id", Type::Int).column("cat", Type::Int).primary_key(&["id"]),
    /// )?;
    /// let by_cat = db.create_index_as("by_cat", &t, &["cat"], Unique::No, IndexKind::MvPbt)?;
    /// db.run(|x| {
    ///     x.insert(&t, row![1, 10])?;
    ///     x.insert(&t, row![2, 10])
    /// })?;
    /// let mut old = db.begin_read_only()?;
    /// db.run(|x| x.update(&t, &key![1], &[("cat", Value::Int(20))]))?;
    /// // The old snapshot still finds row 1 under the key it had then; the
    /// // covering scan answers (cat, id) from the index alone.
    /// assert_eq!(old.index_scan_keys(&by_cat, key![10]..=key![10])?, vec![row![10, 1], row![10, 2]]);
    /// let mut now = db.begin_read_only()?;
    /// assert_eq!(now.index_get(&by_cat, &key![10])?, vec![row![2, 10]]);
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn create_index_as(
        &self,
        name: &str,
        table: &Table,
        columns: &[&str],
        unique: Unique,
        kind: IndexKind,
    ) -> Result<Index> {
        let db = &self.inner;
        db.check_writable()?;
        let ti = &table.inner;
        if ti.owner != db.id {
            return Err(Error::Schema(format!(
                "table {} belongs to another database",
                table.name()
            )));
        }
        if ti.dropped.load(SeqCst) {
            return Err(Error::TableDropped {
                table: table.name().to_string(),
            });
        }
        if name.is_empty() {
            return Err(Error::Schema("index name is empty".into()));
        }
        if columns.is_empty() {
            return Err(Error::Schema(format!("index {name} names no column")));
        }
        let mut cols = Vec::new();
        for c in columns {
            let i = ti.schema.column_index(c)?;
            if cols.contains(&i) {
                return Err(Error::Schema(format!(
                    "index {name} names column {c} twice"
                )));
            }
            cols.push(i);
        }
        let idx = new_index(db, ti, name, cols, unique, kind);
        {
            let mut names = db.indexes.by_name.write();
            if names.contains_key(name) {
                return Err(Error::IndexExists {
                    index: name.to_string(),
                });
            }
            names.insert(name.to_string(), (Arc::clone(&idx), Arc::clone(ti)));
        }
        let _ddl = ti.secondary.ddl.lock();
        publish(ti, &idx);
        let built = backfill(db, ti, &idx).and_then(|()| {
            // Durable: log the definition under the catalog lock (as
            // create_table), after the back-fill succeeded, so recovery
            // never meets an index that was refused.
            match db.log.get() {
                Some(log) => {
                    let names = db.names.write();
                    if ti.dropped.load(SeqCst) {
                        return Err(Error::TableDropped {
                            table: ti.schema.name.clone(),
                        });
                    }
                    let lsn = log.catalog(&CatalogRecord::CreateIndex {
                        table: ti.id,
                        name: name.to_string(),
                        columns: idx.column_names.clone(),
                        unique: idx.unique,
                        kind: idx.kind,
                    })?;
                    idx.defined.store(true, SeqCst);
                    drop(names);
                    Ok(Some((log, lsn)))
                }
                // In memory the built index is final at once: a backup's
                // checkpoint carries it (`Database::backup`).
                None => {
                    idx.defined.store(true, SeqCst);
                    Ok(None)
                }
            }
        });
        let logged = match built {
            Ok(l) => l,
            Err(e) => {
                idx.dropped.store(true, SeqCst);
                ti.secondary.replace(&ti.indexed, |l| {
                    l.iter()
                        .filter(|i| !Arc::ptr_eq(i, &idx))
                        .cloned()
                        .collect()
                });
                db.indexes.by_name.write().remove(name);
                return Err(e);
            }
        };
        drop(_ddl);
        // The back-fill's entries count now, not at this thread's next
        // commit (`stats::MemoryGauge`).
        db.gc.common.memory.hand_over(0);
        if let Some((log, lsn)) = logged {
            log.wait_durable(lsn)?;
        }
        Ok(Index {
            inner: idx,
            table: table.clone(),
        })
    }

    /// Freezes the writable partition P_N of MV-PBT index `idx` now (as
    /// reaching `Options::mvpbt_partition_records` does): it becomes an
    /// immutable sorted partition without the records no live snapshot can
    /// see, with its Bloom filters; then merges all frozen partitions into
    /// one, with the same GC. With no snapshot open, that leaves one record
    /// per row. `Error::Misuse` for another kind.
    pub fn freeze_index(&self, idx: &Index) -> Result<()> {
        let si = &idx.inner;
        if si.owner != self.inner.id {
            return Err(Error::Schema(format!(
                "index {} belongs to another database",
                si.name
            )));
        }
        let Some(p) = &si.mvpbt else {
            return Err(Error::Misuse(format!(
                "index {} is {}, not an MV-PBT index (IndexKind::MvPbt): it has no partitions",
                si.name, si.kind
            )));
        };
        let snaps = crate::gc::Engine::snapshots(&*self.inner);
        p.freeze(si, &snaps, &self.inner.tids, true);
        Ok(())
    }

    /// Looks an index up by name.
    pub fn index(&self, name: &str) -> Result<Index> {
        let names = self.inner.indexes.by_name.read();
        let (idx, t) = names.get(name).ok_or_else(|| Error::NoSuchIndex {
            index: name.to_string(),
        })?;
        Ok(Index {
            inner: Arc::clone(idx),
            table: Table {
                inner: Arc::clone(t),
            },
        })
    }

    /// Names of all secondary indexes.
    pub fn index_names(&self) -> Vec<String> {
        let mut v: Vec<String> = self.inner.indexes.by_name.read().keys().cloned().collect();
        v.sort();
        v
    }

    /// Drops an index. Later scans through any handle to it fail with
    /// `Error::Schema`; writers stop maintaining it at once.
    pub fn drop_index(&self, name: &str) -> Result<()> {
        self.inner.check_writable()?;
        // The catalog lock orders the drop record with checkpoints. An
        // index of a table being altered is dropped from the altered table
        // (waiting for the alter: `txn::alters`).
        let names = loop {
            let names = self.inner.names.write();
            let of = self
                .inner
                .indexes
                .by_name
                .read()
                .get(name)
                .map(|(_, t)| t.id);
            match of {
                Some(id) if self.inner.alters.holds_table(id) => {
                    drop(names);
                    self.inner.alters.wait_for_table(id);
                }
                _ => break names,
            }
        };
        let (idx, t, logged) = {
            let mut by_name = self.inner.indexes.by_name.write();
            if !by_name.contains_key(name) {
                return Err(Error::NoSuchIndex {
                    index: name.to_string(),
                });
            }
            let logged = match self.inner.log.get() {
                Some(log) if by_name[name].0.defined.load(SeqCst) => Some((
                    log,
                    log.catalog(&CatalogRecord::DropIndex {
                        name: name.to_string(),
                    })?,
                )),
                _ => None,
            };
            let (idx, t) = by_name.remove(name).expect("present");
            (idx, t, logged)
        };
        drop(names);
        idx.dropped.store(true, SeqCst);
        let _ddl = t.secondary.ddl.lock();
        t.secondary.replace(&t.indexed, |l| {
            l.iter()
                .filter(|i| !Arc::ptr_eq(i, &idx))
                .cloned()
                .collect()
        });
        drop(_ddl);
        if let Some((log, lsn)) = logged {
            log.wait_durable(lsn)?;
        }
        Ok(())
    }
}

/// A new, empty index `name` of `kind` on columns `cols` (positions) of
/// `ti`, not yet published or named in the catalog.
pub(super) fn new_index(
    db: &DbInner,
    ti: &TableInner,
    name: &str,
    cols: Vec<usize>,
    unique: Unique,
    kind: IndexKind,
) -> Arc<SecondaryIndex> {
    let names: Vec<&str> = cols
        .iter()
        .map(|&i| ti.schema.columns[i].name.as_str())
        .collect();
    // With a limit, the gauge counts the index's entries.
    let memory = &db.gc.common.memory;
    let gauge = memory.limit().map(|_| Arc::clone(memory));
    Arc::new(SecondaryIndex::new(
        name,
        db.id,
        cols,
        &names,
        unique,
        db.opts.index_pointers,
        kind,
        db.opts.mvpbt_partition_records,
        db.mvpbt_spill.as_ref().map(|d| {
            (
                Arc::clone(d),
                crate::index::mvpbt_spill::stem(&ti.schema.name, name),
            )
        }),
        gauge,
    ))
}

/// Publishes `idx` to `ti`'s writers (under `ti`'s DDL lock): every write
/// from now on maintains it.
pub(super) fn publish(ti: &TableInner, idx: &Arc<SecondaryIndex>) {
    ti.secondary.set_kind(idx.pointers);
    ti.secondary.replace(&ti.indexed, |l| {
        let mut v = l.to_vec();
        v.push(Arc::clone(idx));
        v
    });
}

/// Fills a freshly published index from the table's committed versions.
fn backfill(db: &DbInner, t: &TableInner, idx: &SecondaryIndex) -> Result<()> {
    // Transactions that began before now may have written without knowing
    // the index; wait for them. Bumping the clock makes every later begin
    // strictly newer, so they are not waited for. (With LSN commit stamps
    // the clock is the log's counter: a bare increment would leave a hole
    // in the log, so the bump is a minimal skip record.)
    let published = match db.log.get().filter(|l| l.lsn_stamps()) {
        Some(l) => l.bump(),
        None => db.clock.fetch_add(crate::cc::CLOCK_STEP, SeqCst) + crate::cc::CLOCK_STEP,
    };
    let start = Instant::now();
    while db.tids.min_begin(true) < published {
        if start.elapsed() > BACKFILL_WAIT {
            return Err(Error::Misuse(format!(
                "create_index {} waited {BACKFILL_WAIT:?} for read-write transactions that began before it; finish them first",
                idx.name
            )));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    // GC must not cut versions while we add entries for them (an entry for
    // a version it retires would dangle, for physical pointers).
    db.gc
        .paused(|| with_index_kind!(idx.dispatch(), K => K::backfill(t, idx)));
    if idx.unique {
        with_index_kind!(idx.dispatch(), K => K::check_unique(t, idx))?;
    }
    Ok(())
}
