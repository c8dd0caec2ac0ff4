//! Schema evolution: [`Database::alter_table`] adds a nullable column,
//! drops or renames a column, or renames the table, and keeps every row.
//!
//! An alter rebuilds the table: the old one is frozen the way
//! `drop_table` freezes a table (commits that wrote it from then on are
//! refused, those already deciding are waited for), its rows as of that
//! moment are copied into a new table with the new schema, and the name
//! moves to the new table, all under the catalog lock. In the log it is
//! one catalog record, written before the copy:
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
//! Costs and limits, said where a caller meets them: the copy is O(rows)
//! and holds the catalog lock (DDL and table lookups wait); the old
//! table's memory stays until the database is dropped (as a dropped
//! table's); a table with secondary indexes is refused (drop them, alter,
//! create them again), so that no index is left half-rebuilt by a crash.

use super::*;
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
    /// Refused, with nothing changed: an unknown table or column
    /// ([`Error::NoSuchTable`], [`Error::NoSuchColumn`]), a name already
    /// taken ([`Error::TableExists`], [`Error::Schema`] for a column),
    /// dropping a primary-key column, and a table with secondary indexes
    /// (drop them first; see the module doc). The copy is O(rows); the
    /// old rows' memory is released when the database is dropped.
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
        let names = self.inner.names.write();
        let id = *names.get(name).ok_or_else(|| Error::NoSuchTable {
            table: name.to_string(),
        })?;
        let old = Arc::clone(&self.inner.tables.read()[id as usize]);
        let (schema, sources) = plan(&old.schema, &change)?;
        if schema.name != name && names.contains_key(&schema.name) {
            return Err(Error::TableExists {
                table: schema.name.clone(),
            });
        }
        let indexes: Vec<String> = self
            .inner
            .indexes
            .by_name
            .read()
            .iter()
            .filter(|(_, (_, t))| t.id == id)
            .map(|(n, _)| n.clone())
            .collect();
        if !indexes.is_empty() {
            return Err(Error::Schema(format!(
                "table {name} has secondary indexes ({}): drop them before altering it, and create them again after",
                indexes.join(", ")
            )));
        }
        self.alter_to(names, &old, schema, sources)
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
        let t = self.alter_to(names, &old, schema, sources)?;
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
    /// rows and moves the name (see the module doc).
    fn alter_to(
        &self,
        mut names: parking_lot::RwLockWriteGuard<'_, HashMap<String, u32>>,
        old: &Arc<TableInner>,
        schema: Schema,
        sources: Vec<u32>,
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
            // (A failure here is a failing log: the database refuses
            // writes from now on, and the next open completes the alter
            // from its record.)
            let mut tx = Transaction::begin(Arc::clone(&self.inner), false)?;
            for r in &rows {
                let row = sources
                    .iter()
                    .map(|&s| match s {
                        NO_SOURCE => Value::Null,
                        s => r[s as usize].clone(),
                    })
                    .collect();
                tx.insert_unlimited(&t, row)?;
            }
            tx.commit()?;
            match last {
                Some(k) if rows.len() == COPY_BATCH => from = std::ops::Bound::Excluded(k),
                _ => break,
            }
        }
        drop(snap);
        names.remove(&old.schema.name);
        names.insert(new_name, id);
        self.inner.indexes.forget_table(old.id);
        drop(names);
        if let Some((log, lsn)) = logged {
            log.wait_durable(lsn)?;
        }
        Ok(t)
    }
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
