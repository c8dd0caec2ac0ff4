//! Schema evolution: [`Database::alter_table`] adds a nullable column,
//! drops or renames a column, or renames the table, and keeps every row.
//!
//! An alter rebuilds the table: the old one is frozen the way
//! `drop_table` freezes a table (commits that wrote it from then on are
//! refused, those already deciding are waited for), its rows as of that
//! moment are copied into a new table with the new schema, and the name
//! moves to the new table. The freeze and the move are under the catalog
//! lock, the copy is not: meanwhile the alter holds the table's name, the
//! name it takes and the table (`txn::alters`), so that what would touch
//! them waits and everything else goes on. In the log it is one catalog
//! record, written before the copy:
//!
//! ```text
//!  old table (id 3) ── frozen ──> AlterTable { table: 3, id: 7, schema', sources }
//!                                   │  new column i takes old column sources[i]
//!                                   │  (NO_SOURCE: null in every row)
//!                                   ▼
//!  replay: rebuild table 7 from table 3's rows as of the record, drop 3
//!  run:    the same, then the copying commits (logged Puts of the same
//!          rows, which replay applies as overwrites)
//! ```
//!
//! So a crash anywhere after the record finds the whole table after
//! recovery, and a crash before it the old one: the alter is atomic on
//! disk. The invariant this module owns: **the new table holds exactly
//! the old table's rows as of the freeze, each mapped by `sources`**
//! (`tests/alter.rs`, in memory, across a restart, and under writers).
//!
//! **Secondary indexes move with the table.** Each index of the old
//! table is made again on the new one, empty, under the same name, with
//! the same uniqueness and kind, on the same columns (found by `sources`:
//! a renamed column keeps its indexes under its new name; dropping an
//! indexed column is refused, [`Error::ColumnIndexed`]), and published
//! before the first row is copied, so the copying inserts fill it as any
//! insert does (recovery rebuilds indexes the same way). The names move
//! to the new indexes when the table's name moves, in one step
//! (`IndexCatalog::move_table`). The log needs nothing more: which
//! indexes the old table had is in the log before the record (their
//! `CreateIndex` records, or the checkpoint's), and replay derives the
//! moved ones from them and the record, as the running alter did; the
//! checkpoints after it carry them as the new table's.
//!
//! ```text
//!  plan:  schema', sources, each index's columns mapped ── refused here:
//!         nothing changed (unknown column, indexed column dropped, ...)
//!  catalog lock: freeze old ── log AlterTable ── new table + its empty
//!         indexes, published ── hold both names and the old table
//!  no lock: copy rows (inserts fill the indexes)
//!  catalog lock: let go ── move table name and index names ── old
//!         indexes dropped
//! ```
//!
//! Held during the copy, and why each waits (`txn::alters`): a lookup of
//! either name (it gets the altered table, never the frozen one, nor "no
//! such table" for the new name); a create, drop or alter of either name
//! and a drop of the old table's indexes (their log records would come
//! after the alter's, where replay finds the altered table, while in
//! memory they would meet the old one); a checkpoint (one in the middle
//! would begin after the record and find the old table frozen and the new
//! one half copied: recovery would lose the rest of the rows). Nothing
//! else can reach the old table's name or the new table: the new table
//! has no name yet, the old one is frozen (writes through handles to it
//! are refused, as a dropped table's, and so is `create_index` on it), and
//! an index lookup by name (`Database::index`) gives the old index, which
//! fails as its table does. So when the alter takes the catalog lock
//! again, nothing has changed either name, and it moves them with no
//! further check.
//!
//! A failure part way leaves no half-altered table: before the record,
//! the freeze is undone; after it, in memory, so is everything (the new
//! table and its indexes are dropped unnamed, the old one thawed), and
//! with a log the record completes the alter at the next open (a copy
//! fails there only when the log failed, which leaves the database
//! read-only until then). Catalog names move only at the end, so no
//! reader ever finds a name on a half-copied table.
//!
//! Costs and limits, said where a caller meets them: the copy is O(rows)
//! plus the indexes' inserts; lookups of other tables and DDL on them go
//! on meanwhile, lookups and DDL of this table (and checkpoints) wait for
//! it; `Database::table_names` lists the old name until the alter is
//! done; the old table's memory goes as a dropped table's does; an index
//! still being created when the alter starts makes it fail
//! (`Error::Misuse`: alter after `create_index` returned).

use super::*;
use crate::index::secondary::{SecondaryIndex, Unique};
use crate::log::record::NO_SOURCE;
use crate::value::{Column, Type, Value};

/// One change [`Database::alter_table`] makes to a table's schema.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Alter {
    /// A nullable column after the others: every existing row reads it
    /// as null.
    AddColumn { name: String, ty: Type },
    /// A column outside the primary key: its values are gone.
    DropColumn(String),
    /// A new name for a column (the primary key's too).
    RenameColumn { from: String, to: String },
    /// A new name for the table.
    Rename(String),
}

/// Rows copied per transaction.
const COPY_BATCH: usize = 4096;

impl Database {
    /// Changes table `name`'s schema and returns the table as it is now.
    /// Every row is kept (a new column reads as null in each). Handles to
    /// the table taken before fail with [`Error::TableDropped`] from now
    /// on, and so does the commit of a transaction that wrote to it and
    /// had not committed when the alter began: take the returned table (or
    /// [`Database::table`]) instead.
    ///
    /// The table's secondary indexes are rebuilt on the altered table
    /// under the same names (same columns, renamed with them, uniqueness
    /// and kind); take new handles ([`Database::index`]): the old ones
    /// fail from now on, as the table's do.
    ///
    /// Refused, with nothing changed: an unknown table or column
    /// ([`Error::NoSuchTable`], [`Error::NoSuchColumn`]), a name already
    /// taken ([`Error::TableExists`], [`Error::Schema`] for a column),
    /// dropping a primary-key column, dropping a column an index keys on
    /// ([`Error::ColumnIndexed`], naming the index: drop it first), and a
    /// table whose index is still being created ([`Error::Misuse`]). The
    /// copy is O(rows), and does not hold the catalog lock: other tables
    /// are looked up, created, altered and dropped meanwhile, while a
    /// lookup of this table (by either name), DDL on it and checkpoints
    /// wait for the alter. The old rows' memory goes as a dropped
    /// table's does.
    ///
    /// ```
    /// use strata::{key, row, Alter, Database, Options, Schema, Type, Value};
    ///
    /// let db = Database::open(Options::default())?;
    /// let t = db.create_table(
    ///     Schema::new("users").column("id", Type::Int).column("name", Type::Text).primary_key(&["id"]),
    /// )?;
    /// db.run(|tx| tx.insert(&t, row![1, "ada"]))?;
    /// let t = db.alter_table("users", Alter::AddColumn { name: "email".into(), ty: Type::Text })?;
    /// db.run(|tx| tx.insert(&t, row![2, "bob", "bob@x"]))?;
    /// let mut ro = db.begin_read_only()?;
    /// assert_eq!(ro.get(&t, &key![1])?.unwrap(), row![1, "ada", Value::Null]);
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn alter_table(&self, name: &str, change: Alter) -> Result<Table> {
        self.inner.check_writable()?;
        // Neither name may be held by another alter still copying
        // (`txn::alters`): wait for it, then look again.
        let (names, old, schema, sources) = loop {
            let names = self.inner.names_free_of(name);
            let id = *names.get(name).ok_or_else(|| Error::NoSuchTable {
                table: name.to_string(),
            })?;
            let old = Arc::clone(&self.inner.tables.read()[id as usize]);
            let (schema, sources) = plan(&old.schema, &change)?;
            if self.inner.alters.holds_name(&schema.name) {
                drop(names);
                self.inner.alters.wait_for_name(&schema.name);
                continue;
            }
            break (names, old, schema, sources);
        };
        if schema.name != name && names.contains_key(&schema.name) {
            return Err(Error::TableExists {
                table: schema.name.clone(),
            });
        }
        let indexes = carried_indexes(&self.inner, &old, &sources)?;
        let altered = self.alter_to(names, &old, schema, sources, &indexes);
        // Ours was the last reference but the catalog's: the old table
        // can go now (see `alter_to`).
        drop(old);
        self.inner.gc.reclaim_dropped(&*self.inner);
        altered
    }

    /// Tests: runs `hook` in each alter once it has frozen the table, let
    /// go of the catalog lock and holds its names, before it copies a row
    /// (a test holds an alter there to look at what goes on meanwhile).
    #[cfg(feature = "lab")]
    pub fn pause_alters_for_testing(&self, hook: impl Fn() + Send + Sync + 'static) {
        *self.inner.alters.pause.lock() = Some(Arc::new(hook));
    }

    /// Replays a logged alter (recovery): the same rebuild, at the id the
    /// record names.
    pub(super) fn replay_alter(
        &self,
        table: u32,
        id: u32,
        schema: Schema,
        sources: Vec<u32>,
    ) -> Result<Table> {
        let names = self.inner.names.write();
        let old = self.inner.tables.read().get(table as usize).cloned();
        let old = old.filter(|t| !t.dropped.load(SeqCst)).ok_or_else(|| {
            crate::log::record::corrupt(format!(
                "the log alters table id {table}, which does not exist"
            ))
        })?;
        if sources.len() != schema.columns.len()
            || sources
                .iter()
                .any(|&s| s != NO_SOURCE && s as usize >= old.schema.columns.len())
        {
            return Err(crate::log::record::corrupt(format!(
                "the log's alter of table {} names a column it does not have",
                old.schema.name
            )));
        }
        let schema = schema.validate()?;
        // The running alter refused what does not map; a record that
        // needs it was not written by one.
        let indexes = carried_indexes(&self.inner, &old, &sources).map_err(|e| {
            crate::log::record::corrupt(format!(
                "the log's alter of table {} cannot carry its indexes: {e}",
                old.schema.name
            ))
        })?;
        let t = self.alter_to(names, &old, schema, sources, &indexes);
        drop(old);
        self.inner.gc.reclaim_dropped(&*self.inner);
        let t = t?;
        if t.inner.id != id {
            return Err(crate::log::record::corrupt(format!(
                "the log alters table {} into id {id}, but it got id {}",
                t.name(),
                t.inner.id
            )));
        }
        Ok(t)
    }

    /// Freezes `old`, logs the alter, builds the new table from `old`'s
    /// rows with `indexes` rebuilt on it, and moves the names (see the
    /// module doc). `names` is the catalog lock: let go for the copy, with
    /// both names and the old table held (`txn::alters`), and taken again to
    /// move the names.
    fn alter_to(
        &self,
        names: parking_lot::RwLockWriteGuard<'_, HashMap<String, u32>>,
        old: &Arc<TableInner>,
        schema: Schema,
        sources: Vec<u32>,
        indexes: &[Carried],
    ) -> Result<Table> {
        let id = u32::try_from(self.inner.tables.read().len())
            .map_err(|_| Error::Schema("too many tables".into()))?;
        // Frozen as `drop_table` freezes: commits that wrote it are
        // refused from now on, those past their check come first.
        old.dropped.store(true, SeqCst);
        self.inner.tids.wait_for_deciding();
        let logged = match self.inner.log.get() {
            Some(log) => match log.catalog(&CatalogRecord::AlterTable {
                table: old.id,
                id,
                schema: schema.clone(),
                sources: sources.clone(),
            }) {
                Ok(lsn) => Some((log, lsn)),
                Err(e) => {
                    old.dropped.store(false, SeqCst);
                    return Err(e);
                }
            },
            None => None,
        };
        let new_name = schema.name.clone();
        let t = Table {
            inner: self.new_table_inner(id, schema),
        };
        self.inner.tables.write().push(Arc::clone(&t.inner));
        // Empty and published before the first row: the copy fills them.
        let rebuilt: Vec<Arc<SecondaryIndex>> = {
            let _ddl = t.inner.secondary.ddl.lock();
            indexes
                .iter()
                .map(|c| {
                    let unique = if c.old.unique {
                        Unique::Yes
                    } else {
                        Unique::No
                    };
                    let idx = secondary_ddl::new_index(
                        &self.inner,
                        &t.inner,
                        &c.old.name,
                        c.columns.clone(),
                        unique,
                        c.old.kind,
                    );
                    secondary_ddl::publish(&t.inner, &idx);
                    idx
                })
                .collect()
        };
        // The copy runs without the catalog lock: lookups of other tables
        // and other DDL go on; what would touch these names or this table
        // waits (`txn::alters`), and so do checkpoints.
        let held = Held::new(
            &self.inner,
            old.id,
            [old.schema.name.clone(), new_name.clone()],
        );
        drop(names);
        #[cfg(feature = "lab")]
        self.inner.alters.paused();
        let copied = self.copy_rows(old, &t, &sources);
        let mut names = self.inner.names.write();
        held.let_go();
        if let Err(e) = copied {
            if logged.is_none() {
                // In memory nothing else knows of the alter: undo it. (With
                // a log its record completes it at the next open.)
                t.inner.dropped.store(true, SeqCst);
                for idx in &rebuilt {
                    idx.dropped.store(true, SeqCst);
                }
                old.dropped.store(false, SeqCst);
                self.inner.gc.retire_table(t.inner.id, &self.inner.tids);
            }
            return Err(e);
        }
        // Nothing else moved either name meanwhile: they were held.
        debug_assert_eq!(names.get(&old.schema.name), Some(&old.id));
        debug_assert!(new_name == old.schema.name || !names.contains_key(&new_name));
        names.remove(&old.schema.name);
        names.insert(new_name, id);
        self.inner.indexes.move_table(old.id, &t.inner, &rebuilt);
        drop(names);
        // The old table's memory goes as a dropped table's does (the
        // caller reclaims it once it has let go of `old`).
        self.inner.gc.retire_table(old.id, &self.inner.tids);
        if let Some((log, lsn)) = logged {
            log.wait_durable(lsn)?;
        }
        Ok(t)
    }

    /// Copies `old`'s rows into `t`, each mapped by `sources`, in
    /// transactions of `COPY_BATCH` rows (a failure here is a failing log,
    /// or no transaction slot to copy with).
    fn copy_rows(&self, old: &TableInner, t: &Table, sources: &[u32]) -> Result<()> {
        // Every commit that wrote `old` is in a snapshot taken now; the
        // rows go over a batch at a time, in key order.
        let mut reader = Transaction::begin(Arc::clone(&self.inner), true)?;
        // At the clock: MVTO's read-only snapshot sits below every running
        // writer, so it would miss a commit above a writer still running
        // (one that wrote `old` is refused at its commit, one that did not
        // does not matter here). Nothing `old` holds above the clock or
        // uncommitted can still commit, and GC never takes a newest
        // committed version, so the newest state is the one to copy.
        reader.ts = reader.ts.max(self.inner.clock.load(SeqCst));
        let snap = crate::Snapshot::new(reader);
        let mut from = std::ops::Bound::Unbounded;
        loop {
            let (rows, last) = snap.rows_of_frozen(old, &from, COPY_BATCH);
            let mut tx = Transaction::begin(Arc::clone(&self.inner), false)?;
            for r in &rows {
                let row = sources
                    .iter()
                    .map(|&s| match s {
                        NO_SOURCE => Value::Null,
                        s => r[s as usize].clone(),
                    })
                    .collect();
                tx.insert_unlimited(t, row)?;
            }
            tx.commit()?;
            match last {
                Some(k) if rows.len() == COPY_BATCH => from = std::ops::Bound::Excluded(k),
                _ => return Ok(()),
            }
        }
    }
}

/// An alter held in `DbInner::alters` while it copies: let go under the
/// catalog lock ([`Held::let_go`]), or, if the copy unwinds, by the drop,
/// which takes it.
struct Held<'a> {
    db: &'a DbInner,
    table: u32,
    armed: bool,
}

impl<'a> Held<'a> {
    /// Holds `table` and `names`; the caller holds the catalog lock.
    fn new(db: &'a DbInner, table: u32, names: [String; 2]) -> Held<'a> {
        db.alters.hold(table, names);
        Held {
            db,
            table,
            armed: true,
        }
    }

    /// Lets go; the caller holds the catalog lock (write).
    fn let_go(mut self) {
        self.armed = false;
        self.db.alters.let_go(self.table);
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        if self.armed {
            // Unwinding out of the copy (the catalog lock is not ours).
            let _names = self.db.names.write();
            self.db.alters.let_go(self.table);
        }
    }
}

/// One of the altered table's secondary indexes, as the new table gets
/// it: `columns` are positions in the new schema.
struct Carried {
    old: Arc<SecondaryIndex>,
    columns: Vec<usize>,
}

/// The secondary indexes of `old` (by name), each with its columns'
/// positions in the new schema: the new column whose source is the
/// indexed one. [`Error::ColumnIndexed`] if an indexed column has none
/// (it is dropped); `Error::Misuse` for an index still being built.
fn carried_indexes(db: &DbInner, old: &TableInner, sources: &[u32]) -> Result<Vec<Carried>> {
    let by_name = db.indexes.by_name.read();
    let mut of_old: Vec<&Arc<SecondaryIndex>> = by_name
        .values()
        .filter(|(_, t)| t.id == old.id)
        .map(|(idx, _)| idx)
        .collect();
    of_old.sort_by(|a, b| a.name.cmp(&b.name));
    of_old
        .into_iter()
        .map(|idx| {
            if !idx.defined.load(SeqCst) {
                return Err(Error::Misuse(format!(
                    "index {} of table {} is still being created: alter the table after create_index returns",
                    idx.name, old.schema.name
                )));
            }
            let columns = idx
                .columns
                .iter()
                .zip(&idx.column_names)
                .map(|(&c, name)| {
                    sources
                        .iter()
                        .position(|&s| s as usize == c)
                        .ok_or_else(|| Error::ColumnIndexed {
                            table: old.schema.name.clone(),
                            column: name.clone(),
                            index: idx.name.clone(),
                        })
                })
                .collect::<Result<_>>()?;
            Ok(Carried {
                old: Arc::clone(idx),
                columns,
            })
        })
        .collect()
}

/// The schema `change` makes of `s`, and each new column's source.
fn plan(s: &Schema, change: &Alter) -> Result<(Schema, Vec<u32>)> {
    let mut columns: Vec<(Column, u32)> = s.columns.iter().cloned().zip(0u32..).collect();
    let mut pk: Vec<String> = s
        .primary_key
        .iter()
        .map(|&i| s.columns[i].name.clone())
        .collect();
    let mut name = s.name.clone();
    let taken = |n: &str| -> Result<()> {
        match s.columns.iter().any(|c| c.name == n) {
            true => Err(Error::Schema(format!(
                "table {} already has a column {n}",
                s.name
            ))),
            false => Ok(()),
        }
    };
    match change {
        Alter::AddColumn { name: c, ty } => {
            taken(c)?;
            let col = Column {
                name: c.clone(),
                ty: *ty,
                nullable: true,
            };
            columns.push((col, NO_SOURCE));
        }
        Alter::DropColumn(c) => {
            let i = s.column_index(c)?;
            if s.primary_key.contains(&i) {
                return Err(Error::Schema(format!(
                    "column {}.{c} is part of the primary key and cannot be dropped",
                    s.name
                )));
            }
            columns.remove(i);
        }
        Alter::RenameColumn { from, to } => {
            let i = s.column_index(from)?;
            if from != to {
                taken(to)?;
            }
            columns[i].0.name = to.clone();
            for k in &mut pk {
                if k == from {
                    *k = to.clone();
                }
            }
        }
        Alter::Rename(n) => name = n.clone(),
    }
    let mut out = Schema::new(name);
    for (c, _) in &columns {
        out = if c.nullable {
            out.nullable_column(c.name.clone(), c.ty)
        } else {
            out.column(c.name.clone(), c.ty)
        };
    }
    let pk: Vec<&str> = pk.iter().map(String::as_str).collect();
    let out = out
        .primary_key(&pk)
        .point_lookups(s.point_lookups)
        .validate()?;
    Ok((out, columns.into_iter().map(|(_, i)| i).collect()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{key, row};

    fn db_with_rows() -> (Database, Table) {
        let db = Database::open(Options::default()).unwrap();
        let t = db
            .create_table(
                Schema::new("t")
                    .column("k", Type::Int)
                    .column("a", Type::Text)
                    .column("b", Type::Int)
                    .primary_key(&["k"]),
            )
            .unwrap();
        db.run(|tx| (0..10_000).try_for_each(|k| tx.insert(&t, row![k, "x", k * 2])))
            .unwrap();
        (db, t)
    }

    /// Replay rebuilds the table from the record alone (no copying
    /// commits follow it when the crash came first), in batches across
    /// `COPY_BATCH`, each row mapped by the sources.
    #[test]
    fn the_record_alone_rebuilds_the_table() {
        let (db, t) = db_with_rows();
        let schema = Schema::new("t")
            .column("k", Type::Int)
            .column("b", Type::Int)
            .nullable_column("c", Type::Bool)
            .primary_key(&["k"])
            .validate()
            .unwrap();
        let new = db
            .replay_alter(t.inner.id, 1, schema, vec![0, 2, NO_SOURCE])
            .unwrap();
        let mut ro = db.begin_read_only().unwrap();
        let rows = ro.scan(&new, ..).unwrap();
        assert_eq!(rows.len(), 10_000);
        assert!(rows
            .iter()
            .enumerate()
            .all(|(k, r)| *r == row![k as i64, 2 * k as i64, Value::Null]));
        assert_eq!(
            ro.get(&new, &key![9_999]).unwrap().unwrap()[1],
            Value::Int(19_998)
        );
    }

    /// A record naming a missing table, a column the table lacks, or
    /// another id than the rebuild gets is corruption.
    #[test]
    fn a_record_that_does_not_fit_is_corrupt() {
        let (db, t) = db_with_rows();
        let schema = || {
            Schema::new("t")
                .column("k", Type::Int)
                .primary_key(&["k"])
                .validate()
                .unwrap()
        };
        for (table, id, sources) in [
            (7, 1, vec![0]),
            (t.inner.id, 1, vec![5]),
            (t.inner.id, 1, vec![0, 1]),
        ] {
            let r = db.replay_alter(table, id, schema(), sources);
            assert!(matches!(r, Err(Error::Corrupt(_))), "{r:?}");
        }
        let r = db.replay_alter(t.inner.id, 9, schema(), vec![0]);
        assert!(matches!(r, Err(Error::Corrupt(_))), "{r:?}");
    }
}
