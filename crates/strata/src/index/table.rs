//! A table's physical structure: schema, primary index, secondary indexes
//! and version store (its public handle is `crate::table::Table`).
//!
//! ```text
//!   key ──PrimaryIndex──> tuple id ──Store (indirection array)──> version chain
//! ```
//!
//! The table dereferences to its [`Store`]: storage functions take the
//! store, and a caller holding the table passes it as is.
//!
//! It lives in `index` because the index schemes work on it (a secondary
//! index resolves entries through the table's primary index and store), and
//! everything above (`gc`, `cc`, `txn`) reaches it through `crate::table`.
//! Invariant: a table's id, schema and index scheme never change after it
//! is shared; `dropped` only goes from false to true.

use crate::index::key::{encode, EncodedKey};
use crate::index::primary::{Lookup, PrimaryIndex};
use crate::index::scan_log::ScanLog;
use crate::options::{IndexPointers, NonInline, VersionStorage};
use crate::storage::dirty::DirtyBlocks;
use crate::storage::version::Version;
use crate::storage::{self, Coop, Store};
use crate::value::{Key, Schema};
use crossbeam_epoch::Guard;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

pub struct TableInner {
    pub id: u32,
    /// Id of the database that owns the table.
    pub owner: u64,
    pub schema: Schema,
    /// `schema.column_ranks()`: an insert's type check (`check_row_by`).
    pub column_ranks: Box<[u8]>,
    pub int_key: bool,
    /// Bytes of a version to prefetch ahead of a point read: the header and
    /// the row image, up to four cache lines.
    pub row_prefetch_bytes: usize,
    /// The same for the master of the in-place schemes (see
    /// `Transaction::prefetch`).
    pub master_prefetch_bytes: usize,
    pub index: PrimaryIndex,
    /// Tuple slots and versions (`t.rows`, `t.scheme`, ... through `Deref`).
    pub store: Store,
    /// MVTO: largest timestamp of a transaction that read a key range or an
    /// absent key here; an insert below it would be a phantom for that reader.
    pub predicate_read_ts: AtomicU64,
    /// Set by `Database::drop_table`; a committer that wrote here checks
    /// it after announcing itself (`crate::sync`'s: a step of the shuttle
    /// model `drop_table_orders_or_refuses_every_commit`).
    pub dropped: crate::sync::atomic::AtomicBool,
    /// An empty stand-in for a dropped table whose memory was reclaimed
    /// (`gc::dropped`): it keeps the id and schema in the catalog (the
    /// checkpoint records every id), has no rows, and is always dropped.
    pub tombstone: bool,
    /// SSN/SSI: ranges read by committing and recently committed scanners
    /// (see `index::scan_log`, `cc::predicate`).
    pub scan_log: ScanLog,
    /// Secondary indexes (see `index::secondary`).
    pub secondary: crate::index::secondary::TableIndexes,
    /// Tuple-level vacuum: blocks written since the last pass.
    pub dirty: DirtyBlocks,
    /// Where the primary index's named entry point moves (physical
    /// pointers): with every write (N2O), with GC's prunes (O2N), or never
    /// (logical pointers). Fixed before the table is shared.
    names: EntryPointMoves,
}

/// When a physical primary entry must be re-pointed (see
/// [`TableInner::after_write`], [`TableInner::rename_entry_point`]).
#[derive(Clone, Copy, PartialEq, Eq)]
enum EntryPointMoves {
    /// Logical pointers: the entry names no version.
    Never,
    /// N2O: the newest version is the entry point.
    OnWrite,
    /// O2N: the oldest is, which GC moves.
    OnPrune,
}

impl std::ops::Deref for TableInner {
    type Target = Store;

    #[inline]
    fn deref(&self) -> &Store {
        &self.store
    }
}

impl TableInner {
    pub fn new(id: u32, owner: u64, schema: Schema) -> Self {
        let int_key = schema.int_key();
        let point = schema.point_lookups;
        let columns = schema.columns.len();
        let row_prefetch_bytes = (std::mem::size_of::<crate::storage::version::Version>()
            + schema.columns.len() * std::mem::size_of::<crate::value::Value>())
        .min(256);
        TableInner {
            id,
            owner,
            column_ranks: schema.column_ranks(),
            schema,
            int_key,
            row_prefetch_bytes,
            master_prefetch_bytes: crate::storage::in_place::master::prefetch_bytes(columns),
            index: PrimaryIndex::new(int_key, point),
            store: Store::new(columns),
            predicate_read_ts: AtomicU64::new(0),
            dropped: crate::sync::atomic::AtomicBool::new(false),
            tombstone: false,
            scan_log: ScanLog::default(),
            secondary: Default::default(),
            dirty: DirtyBlocks::default(),
            names: EntryPointMoves::Never,
        }
    }

    /// The stand-in for dropped table `self` once it is reclaimed (see
    /// [`TableInner::tombstone`]).
    pub fn tombstone_of(&self) -> TableInner {
        let t = TableInner {
            tombstone: true,
            ..TableInner::new(self.id, self.owner, self.schema.clone())
        };
        t.dropped.store(true, std::sync::atomic::Ordering::SeqCst);
        t
    }

    /// Sets the version storage scheme (before the table is shared).
    pub fn with_storage(mut self, storage: VersionStorage, non_inline: NonInline) -> Self {
        self.store.scheme = storage;
        self.store.non_inline = non_inline;
        self.set_names();
        self
    }

    fn set_names(&mut self) {
        let names = self.index.names_versions();
        self.names = match self.store.scheme {
            VersionStorage::AppendNewToOld if names => EntryPointMoves::OnWrite,
            VersionStorage::AppendOldToNew if names => EntryPointMoves::OnPrune,
            // Logical pointers; physical ones need append-only storage.
            VersionStorage::AppendNewToOld
            | VersionStorage::AppendOldToNew
            | VersionStorage::TimeTravel
            | VersionStorage::Delta
            | VersionStorage::Siro => EntryPointMoves::Never,
        };
    }

    /// Sets the database's index pointer scheme (before the table is
    /// shared): under physical pointers the primary index names versions
    /// (`index::primary`).
    pub fn with_index_pointers(mut self, pointers: IndexPointers) -> Self {
        if pointers == IndexPointers::Physical {
            self.index = PrimaryIndex::naming_versions(self.int_key, self.schema.point_lookups);
        }
        self.set_names();
        self
    }

    /// Whether a write's new version moves the entry point the primary
    /// index names: physical pointers on a new-to-old chain (O2N's entry
    /// point, the oldest version, moves only when GC prunes it).
    #[inline(always)]
    pub fn writes_name_versions(&self) -> bool {
        self.names == EntryPointMoves::OnWrite
    }

    /// Whether GC's prunes move the entry point the primary index names
    /// (physical pointers on an O2N chain: its oldest version).
    #[inline(always)]
    pub fn prunes_name_versions(&self) -> bool {
        self.names == EntryPointMoves::OnPrune
    }

    /// A write left `tuple` (key `ek`, found by the lookup `found`) with a
    /// new newest version. Physical pointers, N2O: the primary entry is
    /// re-pointed at it (an index write per new version, Wu et al. §6),
    /// and the answer is true. Otherwise the entry's chain-head hint
    /// follows it, so readers find it hinted (`index::hash`; a no-op for
    /// byte keys). (Always inline, as the hint's code was in the write
    /// path; the physical pointers' index write stays a call.)
    #[inline(always)]
    pub fn after_write(
        &self,
        found: Option<&Lookup<'_>>,
        ek: &EncodedKey,
        tuple: u64,
        guard: &Guard,
    ) -> bool {
        let head = self.rows.head(tuple) as *const u8;
        if self.writes_name_versions() {
            return self.name_entry_point(ek, tuple, head);
        }
        match found {
            // (The entry the lookup found: no second probe.)
            Some(l) if l.tuple == tuple => l.set_hint(head),
            _ => self.index.set_hint(ek, tuple, head, guard),
        }
        false
    }

    #[inline(never)]
    fn name_entry_point(&self, ek: &EncodedKey, tuple: u64, head: *const u8) -> bool {
        self.index.name_version(ek, tuple, head)
    }

    /// Re-points the primary entry of `tuple` at its chain's entry point
    /// (the indirection slot's version) when the index names versions:
    /// after a write replaced our own newest version, an abort undid one,
    /// or GC pruned an O2N chain's oldest versions. `ek`: the row's key if
    /// the caller has it (else read from the entry point). Pinned.
    pub fn rename_entry_point(&self, ek: Option<&EncodedKey>, tuple: u64) {
        if !self.index.names_versions() {
            return;
        }
        let head = self.rows.head(tuple);
        // SAFETY: pinned by the caller; a chain's first version is alive.
        let Some(h) = (unsafe { head.as_ref() }) else {
            return;
        };
        let derived;
        let ek = match ek {
            Some(k) => k,
            None => {
                derived = self.key_of_version(h);
                &derived
            }
        };
        self.index.name_version(ek, tuple, head as *const u8);
    }

    /// The primary-index key of `v`, a version of one of this table's
    /// rows (a tombstone holds its key as its values). Pinned, `v` alive.
    pub fn key_of_version(&self, v: &Version) -> EncodedKey {
        if v.is_tombstone() {
            return self.encode(&Key(v.data().to_vec()));
        }
        storage::with_values(v, |d| self.encode(&self.schema.key_of(d)))
    }

    /// Allocates versions from these memory spaces (before the table is
    /// shared).
    pub fn with_spaces(mut self, spaces: Option<Arc<crate::storage::space::SpaceSet>>) -> Self {
        self.store.spaces = spaces;
        self
    }

    /// Counts its payloads and primary-index entries for the database's
    /// memory gauge, or not (`Store::gauged`; before the table is shared,
    /// so that every holder releases under the flag it took under).
    pub fn with_gauge(mut self, gauged: crate::storage::meter::Gauged) -> Self {
        self.store.gauged = gauged;
        self
    }

    /// Sets up SIRO's segments when the table uses it (before the table is
    /// shared).
    pub fn with_siro(mut self, tuning: &crate::options::SiroTuning) -> Self {
        if self.store.scheme == VersionStorage::Siro {
            self.store.siro = Some(Arc::new(crate::storage::siro::Siro::new(tuning.clone())));
        }
        self
    }

    /// Turns on cooperative cleaning (before the table is shared).
    pub fn with_coop(mut self, coop: Option<Arc<Coop>>) -> Self {
        self.store.coop = coop;
        self
    }

    #[inline]
    pub fn encode(&self, key: &Key) -> EncodedKey {
        encode(key, self.int_key)
    }

    /// The encoded primary key of a full row (an insert's), built as a
    /// `Key` only where the encoding needs one.
    #[inline]
    pub fn encode_row_key(&self, row: &[crate::Value]) -> EncodedKey {
        super::key::encode_cols(row, &self.schema.primary_key, self.int_key)
            .unwrap_or_else(|| self.encode(&self.schema.key_of(row)))
    }
}

#[cfg(test)]
mod tests {
    use crate::{key, row, Database, IndexPointers, Options, Schema, Table, Type, Value};
    use crate::{GcPolicy, PointLookups, VersionStorage};

    /// Where a primary entry lives, by the key's shape: an integer key's
    /// hash side, a text key's byte map, or a tree alone.
    #[derive(Clone, Copy, Debug)]
    enum Shape {
        Int,
        Text,
        TreeOnly,
    }
    const SHAPES: [Shape; 3] = [Shape::Int, Shape::Text, Shape::TreeOnly];

    fn kv_shaped(db: &Database, shape: Shape) -> Table {
        let k = if matches!(shape, Shape::Text) {
            Type::Text
        } else {
            Type::Int
        };
        let mut s = Schema::new("kv")
            .column("k", k)
            .column("v", Type::Int)
            .primary_key(&["k"]);
        if matches!(shape, Shape::TreeOnly) {
            s = s.point_lookups(PointLookups::Tree);
        }
        db.create_table(s).unwrap()
    }

    fn kv(db: &Database) -> Table {
        kv_shaped(db, Shape::Int)
    }

    /// Row key `k` in the table's key type (text keys: "k<k>", which does
    /// not pack into an integer code).
    fn key_of(t: &Table, k: i64) -> crate::Key {
        if t.schema().columns[0].ty == Type::Text {
            key![format!("k{k}")]
        } else {
            key![k]
        }
    }

    fn row_of(t: &Table, k: i64, v: i64) -> crate::Row {
        let mut r = key_of(t, k).0;
        r.push(Value::Int(v));
        r
    }

    /// (tuple, the version key `k`'s primary entry names, the row's chain
    /// entry point) as addresses.
    fn entry(t: &Table, k: i64) -> (u64, usize, usize) {
        let guard = crossbeam_epoch::pin();
        let ek = t.inner.encode(&key_of(t, k));
        let (tuple, named) = t
            .inner
            .index
            .named_version(&ek, &guard)
            .unwrap_or_else(|| panic!("no entry for {k} in {}", t.schema().name));
        (tuple, named as usize, t.inner.rows.head(tuple) as usize)
    }

    /// Wu §6 / MV-PBT §3.5: under physical pointers the primary entry names
    /// the chain's entry point, and on an N2O chain every new version moves
    /// it (update, delete, re-insert, a second write of our own), an abort
    /// moves it back; under logical pointers it names none (the tuple id
    /// and the indirection slot lead to the chain). For every shape of
    /// key: the entry lives in an integer hash, a byte map, or a tree's
    /// leaf (a table with no hash side), and each names the version.
    #[test]
    fn physical_pointers_re_point_the_primary_entry_at_each_new_n2o_version() {
        for (p, shape) in IndexPointers::ALL
            .into_iter()
            .flat_map(|p| SHAPES.map(|s| (p, s)))
        {
            let db =
                Database::open(Options::default().index_pointers(p).gc_interval(None)).unwrap();
            let t = kv_shaped(&db, shape);
            let physical = p == IndexPointers::Physical;
            let follows = |when: &str| {
                let (_, named, head) = entry(&t, 1);
                if physical {
                    assert_eq!(
                        named, head,
                        "{p:?} {shape:?} {when}: the entry names the new head"
                    );
                } else {
                    assert_eq!(
                        named, 0,
                        "{p:?} {shape:?} {when}: a logical entry names no version"
                    );
                }
                head
            };
            // Neighbours, so that the tree's leaf moves entries around ours.
            for k in [0, 2, 3] {
                db.run(|x| x.insert(&t, row_of(&t, k, 0))).unwrap();
            }
            let k1 = key_of(&t, 1);
            db.run(|x| x.insert(&t, row_of(&t, 1, 0))).unwrap();
            let v0 = follows("insert");
            db.run(|x| x.update(&t, &k1, &[("v", Value::Int(1))]))
                .unwrap();
            let v1 = follows("update");
            assert_ne!(v1, v0, "N2O: an update makes a new head");
            // Our own version replaced by a second write of ours.
            db.run(|x| {
                x.update(&t, &k1, &[("v", Value::Int(2))])?;
                x.update(&t, &k1, &[("v", Value::Int(3))])
            })
            .unwrap();
            follows("second write of our own");
            // An aborted update: the entry names the head again.
            let before = follows("before the abort");
            let mut w = db.begin().unwrap();
            w.update(&t, &k1, &[("v", Value::Int(9))]).unwrap();
            follows("uncommitted update");
            w.abort();
            assert_eq!(follows("abort"), before);
            db.run(|x| x.delete(&t, &k1)).unwrap();
            // (The next transactions' collection may unlink the deleted
            // row at once: then there is no entry to name anything.)
            if t.inner.index.get(&t.inner.encode(&k1)).is_some() {
                follows("delete");
            }
            db.run(|x| x.insert(&t, row_of(&t, 1, 5))).unwrap();
            follows("insert over the tombstone");
            // A key removed before ours shifts our leaf entry down.
            db.run(|x| x.delete(&t, &key_of(&t, 0))).unwrap();
            db.collect_garbage();
            let k0 = t.inner.encode(&key_of(&t, 0));
            assert_eq!(
                t.inner.index.get(&k0),
                None,
                "GC took the neighbour's entry"
            );
            follows("a neighbour removed");
        }
    }

    /// O2N's entry point is the oldest version: an update leaves the
    /// primary entry alone; GC pruning the oldest moves it.
    #[test]
    fn physical_o2n_entries_name_the_oldest_version_until_gc_prunes_it() {
        let db = Database::open(
            Options::default()
                .version_storage(VersionStorage::AppendOldToNew)
                .gc(GcPolicy::TransactionLevel)
                .index_pointers(IndexPointers::Physical)
                .gc_interval(None),
        )
        .unwrap();
        let t = kv(&db);
        db.run(|x| x.insert(&t, row![1, 0])).unwrap();
        let (_, first, head) = entry(&t, 1);
        assert_eq!(first, head);
        let mut old = db.begin_read_only().unwrap();
        for n in 1..=3 {
            db.run(|x| x.update(&t, &key![1], &[("v", Value::Int(n))]))
                .unwrap();
        }
        assert_eq!(entry(&t, 1).1, first, "updates append at the far end");
        assert_eq!(old.get(&t, &key![1]).unwrap(), Some(row![1, 0]));
        drop(old);
        db.collect_garbage();
        let (_, named, head) = entry(&t, 1);
        assert_ne!(head, first, "GC pruned the oldest versions");
        assert_eq!(named, head, "the entry names the new oldest");
    }
}
