//! Byte layout of log records (logical redo) and of the catalog.
//!
//! Every record is one block with its own CRC, padded to 8 bytes so that the
//! log buffer can move it as whole words:
//!
//! ```text
//!  0       4          8        16       24            28           32
//!  ┌───────┬──────────┬────────┬────────┬─────────────┬────────────┬──────────────┐
//!  │ magic │ total len│  LSN   │  cts   │ payload crc │ header crc │ payload ...  │
//!  └───────┴──────────┴────────┴────────┴─────────────┴────────────┴──────────────┘
//!  payload = kind (1 commit | 2 catalog | 3 skip | 4 operation |
//!                 5 chained commit), then
//!    commit:  n ops, each: op, table id, then
//!               put:    the whole row (inserts, and rows over a tombstone)
//!               delete: the key
//!               update: the key, then n × (column, value) of the changed
//!                       columns only (an after-image of what changed)
//!    catalog: one CatalogRecord
//!    skip:    zeros to the end (a log range reserved by a transaction that
//!             then aborted; recovery ignores it, see `log`)
//!    operation (per-operation logging): the LSN of the transaction's
//!             previous operation record (u64::MAX: none), then one op as
//!             in a commit record
//!    chained commit (per-operation logging): the LSN of the
//!             transaction's last operation record, and how many it wrote;
//!             the header's cts is the commit timestamp
//!  values  = n, each: tag, then
//!               0 int:   i64            3 bytes: len + bytes
//!               1 text:  len + UTF-8    4 float: f64 bits (as written)
//!               2 null:  nothing        5 bool:  0 | 1
//!  schema  = name, n columns (name, type byte), n pk columns (position)
//!  type byte = 0 int | 1 text | 2 bytes | 3 float | 4 bool, + 0x80 if nullable
//! ```
//!
//! Tags 2..5 and the type bytes 2..4 and 0x80 came with the `Null`, `Bytes`,
//! `Float` and `Bool` values: earlier logs and checkpoints hold none of them,
//! so they read as before (no format version changed); an older Strata
//! refuses a file that holds one (`Error::Corrupt`, "unknown value tag" or
//! "unknown column type"), as this one refuses any unknown tag.
//!
//! The header has its own CRC so that a reader which finds a damaged record
//! can still tell a real record header further on from garbage (see
//! `segment::scan`): the LSN in a header must equal the record's position.

use crate::error::{Error, Result};
use crate::options::IndexKind;
use crate::value::{Column, PointLookups, Schema, Type, Value};
use std::sync::Arc;

pub const RECORD_MAGIC: u32 = 0x4c52_5453; // "STRL"
pub const HEADER_BYTES: usize = 32;

pub const KIND_COMMIT: u8 = 1;
pub const KIND_CATALOG: u8 = 2;
/// Kind 3, added with LSN commit stamps: logs written before hold none, so
/// they read as before; an older Strata refuses a log holding one
/// (`Error::Corrupt`, "unknown record kind 3").
pub const KIND_SKIP: u8 = 3;
/// Kind 4, per-operation logging (`LogGranularity::PerOperation`): one
/// write of a transaction that has not committed yet. Logs written before
/// hold none; an older Strata refuses a log holding one.
pub const KIND_OP: u8 = 4;
/// Kind 5, per-operation logging: a commit that names its transaction's
/// operation records (the last one; each names the one before).
pub const KIND_COMMIT_OPS: u8 = 5;
/// An operation record's `prev` when it is its transaction's first.
pub const NO_PREV_OP: u64 = u64::MAX;
/// The smallest record: a header and one padded payload word.
pub const MIN_RECORD_BYTES: usize = HEADER_BYTES + 8;

pub const OP_PUT: u8 = 1;
pub const OP_DELETE: u8 = 2;
pub const OP_UPDATE: u8 = 3;

/// A durable change to the catalog. New kinds go at the end with a new tag;
/// older logs stay readable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CatalogRecord {
    CreateTable {
        id: u32,
        schema: Schema,
    },
    DropTable {
        id: u32,
    },
    /// A secondary index (tag 3). Recovery creates it at its place in the
    /// log (checkpoints: after the tables, before the rows); rows loaded or
    /// replayed later maintain it, so its entries are never logged.
    CreateIndex {
        table: u32,
        name: String,
        columns: Vec<String>,
        unique: bool,
        /// Stored in bit 1 of the uniqueness byte (set: MV-PBT), so records
        /// written before kinds existed read as `Standard`.
        kind: IndexKind,
    },
    /// Tag 4.
    DropIndex {
        name: String,
    },
    /// Tag 6: `Database::alter_table`. Table `table` is dropped and its
    /// rows as of this record become table `id` with `schema`: new column
    /// `i` takes old column `sources[i]` (`NO_SOURCE`: null). Replay
    /// rebuilds the rows itself, so the alter is one record (the copying
    /// commits that follow it in the log rewrite the same rows).
    AlterTable {
        table: u32,
        id: u32,
        schema: Schema,
        sources: Vec<u32>,
    },
}

/// In [`CatalogRecord::AlterTable`]'s sources: a new column, null in every
/// row.
pub const NO_SOURCE: u32 = u32::MAX;

/// One write of a committed transaction, as replayed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RedoOp {
    /// Insert or overwrite the whole row (its key is in it).
    Put { table: u32, row: Vec<Value> },
    /// Delete the row with this primary key, if present.
    Delete { table: u32, key: Vec<Value> },
    /// Set these columns of the row with this key, if present. Replaying
    /// from a checkpoint that already holds later writes is still right:
    /// per key, every later write is replayed after it.
    Update {
        table: u32,
        key: Vec<Value>,
        cols: Vec<(usize, Value)>,
    },
}

/// A decoded record payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Payload {
    Commit(Vec<RedoOp>),
    Catalog(CatalogRecord),
    /// A reserved range that holds nothing (an aborted transaction's).
    Skip,
    /// One write of a transaction, logged when it was made (per-operation
    /// logging); it counts only once a chained commit names it.
    Op {
        prev: Option<u64>,
        op: RedoOp,
    },
    /// A commit whose writes are the operation records ending at
    /// `last_op` (following `prev` back), `ops` of them.
    CommitOps {
        last_op: u64,
        ops: u32,
    },
}

// ----------------------------------------------------------------- encoding

/// Builds the payload of one commit record, op by op.
pub struct CommitBuilder<'a> {
    buf: &'a mut Vec<u8>,
    count_at: usize,
    n: u32,
}

impl<'a> CommitBuilder<'a> {
    /// Starts a record in `buf` (cleared), leaving room for the header.
    pub fn new(buf: &'a mut Vec<u8>) -> Self {
        buf.clear();
        buf.resize(HEADER_BYTES, 0);
        buf.push(KIND_COMMIT);
        let count_at = buf.len();
        buf.extend_from_slice(&0u32.to_le_bytes());
        CommitBuilder {
            buf,
            count_at,
            n: 0,
        }
    }
    pub fn put(&mut self, table: u32, row: &[Value]) {
        self.op(OP_PUT, table, row);
    }
    pub fn delete(&mut self, table: u32, key: &[Value]) {
        self.op(OP_DELETE, table, key);
    }
    /// An update of the row `old` -> `new`: its key (columns `pk` of
    /// `new`) and the columns whose value changed.
    pub fn update(&mut self, table: u32, pk: &[usize], new: &[Value], old: &[Value]) {
        self.buf.push(OP_UPDATE);
        self.buf.extend_from_slice(&table.to_le_bytes());
        self.buf.extend_from_slice(&(pk.len() as u32).to_le_bytes());
        for &i in pk {
            put_value(self.buf, &new[i]);
        }
        let n_at = self.buf.len();
        self.buf.extend_from_slice(&0u32.to_le_bytes());
        let mut n = 0u32;
        for (i, (a, b)) in new.iter().zip(old).enumerate() {
            if a != b {
                self.buf.extend_from_slice(&(i as u32).to_le_bytes());
                put_value(self.buf, a);
                n += 1;
            }
        }
        self.buf[n_at..n_at + 4].copy_from_slice(&n.to_le_bytes());
        self.n += 1;
    }
    fn op(&mut self, op: u8, table: u32, vals: &[Value]) {
        self.buf.push(op);
        self.buf.extend_from_slice(&table.to_le_bytes());
        put_values(self.buf, vals);
        self.n += 1;
    }
    /// Finishes the payload (padding included); the header is written by
    /// `seal` once the LSN and commit timestamp are known.
    pub fn finish(self) {
        if self.count_at != 0 {
            self.buf[self.count_at..self.count_at + 4].copy_from_slice(&self.n.to_le_bytes());
        }
        pad(self.buf);
    }

    /// Starts an operation record in `buf` (cleared): the caller adds
    /// exactly one op (`put`, `delete` or `update`), then `finish`es it.
    pub fn operation(buf: &'a mut Vec<u8>, prev: u64) -> Self {
        buf.clear();
        buf.resize(HEADER_BYTES, 0);
        buf.push(KIND_OP);
        buf.extend_from_slice(&prev.to_le_bytes());
        CommitBuilder {
            buf,
            count_at: 0,
            n: 0,
        }
    }
}

/// Builds a chained commit record (header room included, not sealed).
pub fn commit_ops_record(buf: &mut Vec<u8>, last_op: u64, ops: u32) {
    buf.clear();
    buf.resize(HEADER_BYTES, 0);
    buf.push(KIND_COMMIT_OPS);
    buf.extend_from_slice(&last_op.to_le_bytes());
    buf.extend_from_slice(&ops.to_le_bytes());
    pad(buf);
}

/// Builds a catalog record (header room included, not sealed).
pub fn catalog_record(buf: &mut Vec<u8>, c: &CatalogRecord) {
    buf.clear();
    buf.resize(HEADER_BYTES, 0);
    buf.push(KIND_CATALOG);
    put_catalog(buf, c);
    pad(buf);
}

/// Turns `buf` (a record's whole reserved length, at least
/// `MIN_RECORD_BYTES`) into an unsealed skip record of the same length.
pub fn skip_record(buf: &mut [u8]) {
    debug_assert!(buf.len() >= MIN_RECORD_BYTES && buf.len().is_multiple_of(8));
    buf[HEADER_BYTES..].fill(0);
    buf[HEADER_BYTES] = KIND_SKIP;
}

fn pad(buf: &mut Vec<u8>) {
    while !buf.len().is_multiple_of(8) {
        buf.push(0);
    }
}

/// Writes the header of a record built above: its LSN and commit timestamp,
/// and both CRCs. `buf.len()` is the padded total length.
pub fn seal(buf: &mut [u8], lsn: u64, cts: u64) {
    let total = buf.len() as u32;
    let payload_crc = crc32c::crc32c(&buf[HEADER_BYTES..]);
    buf[0..4].copy_from_slice(&RECORD_MAGIC.to_le_bytes());
    buf[4..8].copy_from_slice(&total.to_le_bytes());
    buf[8..16].copy_from_slice(&lsn.to_le_bytes());
    buf[16..24].copy_from_slice(&cts.to_le_bytes());
    buf[24..28].copy_from_slice(&payload_crc.to_le_bytes());
    let header_crc = crc32c::crc32c(&buf[0..28]);
    buf[28..32].copy_from_slice(&header_crc.to_le_bytes());
}

pub fn put_values(buf: &mut Vec<u8>, vals: &[Value]) {
    buf.extend_from_slice(&(vals.len() as u32).to_le_bytes());
    for v in vals {
        put_value(buf, v);
    }
}

const V_INT: u8 = 0;
const V_TEXT: u8 = 1;
const V_NULL: u8 = 2;
const V_BYTES: u8 = 3;
const V_FLOAT: u8 = 4;
const V_BOOL: u8 = 5;

fn put_value(buf: &mut Vec<u8>, v: &Value) {
    match v {
        Value::Int(i) => {
            buf.push(V_INT);
            buf.extend_from_slice(&i.to_le_bytes());
        }
        Value::Text(s) => {
            buf.push(V_TEXT);
            put_str(buf, s);
        }
        Value::Null => buf.push(V_NULL),
        Value::Bytes(b) => {
            buf.push(V_BYTES);
            put_bytes(buf, b);
        }
        Value::Float(f) => {
            // The bits as written (`-0.0` and NaN payloads survive).
            buf.push(V_FLOAT);
            buf.extend_from_slice(&f.to_bits().to_le_bytes());
        }
        Value::Bool(b) => {
            buf.push(V_BOOL);
            buf.push(u8::from(*b));
        }
    }
}

/// The schema's type byte: the type, plus `NULLABLE` for a nullable column.
const NULLABLE: u8 = 0x80;

fn type_byte(c: &Column) -> u8 {
    let t = match c.ty {
        Type::Int => 0,
        Type::Text => 1,
        Type::Bytes => 2,
        Type::Float => 3,
        Type::Bool => 4,
    };
    if c.nullable {
        t | NULLABLE
    } else {
        t
    }
}

fn put_bytes(buf: &mut Vec<u8>, b: &[u8]) {
    buf.extend_from_slice(&(b.len() as u32).to_le_bytes());
    buf.extend_from_slice(b);
}

fn put_str(buf: &mut Vec<u8>, s: &str) {
    put_bytes(buf, s.as_bytes());
}

pub fn put_schema(buf: &mut Vec<u8>, s: &Schema) {
    put_str(buf, &s.name);
    buf.extend_from_slice(&(s.columns.len() as u32).to_le_bytes());
    for c in &s.columns {
        put_str(buf, &c.name);
        buf.push(type_byte(c));
    }
    buf.extend_from_slice(&(s.primary_key.len() as u32).to_le_bytes());
    for &i in &s.primary_key {
        buf.extend_from_slice(&(i as u32).to_le_bytes());
    }
}

pub fn put_catalog(buf: &mut Vec<u8>, c: &CatalogRecord) {
    match c {
        // A table with hash lookups keeps the record it always had; one
        // without says so after its schema.
        CatalogRecord::CreateTable { id, schema } => {
            let tree = schema.point_lookups == PointLookups::Tree;
            buf.push(if tree { 5 } else { 1 });
            buf.extend_from_slice(&id.to_le_bytes());
            put_schema(buf, schema);
            if tree {
                buf.push(1);
            }
        }
        CatalogRecord::DropTable { id } => {
            buf.push(2);
            buf.extend_from_slice(&id.to_le_bytes());
        }
        CatalogRecord::CreateIndex {
            table,
            name,
            columns,
            unique,
            kind,
        } => {
            buf.push(3);
            buf.extend_from_slice(&table.to_le_bytes());
            put_str(buf, name);
            buf.extend_from_slice(&(columns.len() as u32).to_le_bytes());
            for c in columns {
                put_str(buf, c);
            }
            let kind_bit = match kind {
                IndexKind::Standard => 0,
                IndexKind::MvPbt => 2,
            };
            buf.push(u8::from(*unique) | kind_bit);
        }
        CatalogRecord::DropIndex { name } => {
            buf.push(4);
            put_str(buf, name);
        }
        CatalogRecord::AlterTable {
            table,
            id,
            schema,
            sources,
        } => {
            buf.push(6);
            buf.extend_from_slice(&table.to_le_bytes());
            buf.extend_from_slice(&id.to_le_bytes());
            put_schema(buf, schema);
            buf.push(u8::from(schema.point_lookups == PointLookups::Tree));
            buf.extend_from_slice(&(sources.len() as u32).to_le_bytes());
            for s in sources {
                buf.extend_from_slice(&s.to_le_bytes());
            }
        }
    }
}

// ----------------------------------------------------------------- decoding

/// A header that passed its own CRC.
#[derive(Debug, Clone, Copy)]
pub struct Header {
    pub total: usize,
    pub lsn: u64,
    pub cts: u64,
    pub payload_crc: u32,
}

/// Parses a record header; `None` if it is not a well-formed one.
pub fn parse_header(b: &[u8]) -> Option<Header> {
    if b.len() < HEADER_BYTES {
        return None;
    }
    let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap());
    let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap());
    if u32_at(0) != RECORD_MAGIC || crc32c::crc32c(&b[0..28]) != u32_at(28) {
        return None;
    }
    let total = u32_at(4) as usize;
    if total < HEADER_BYTES + 8 || !total.is_multiple_of(8) {
        return None;
    }
    Some(Header {
        total,
        lsn: u64_at(8),
        cts: u64_at(16),
        payload_crc: u32_at(24),
    })
}

/// A cursor over bytes whose every read fails with a message instead of
/// panicking on short or malformed input.
pub struct Reader<'a> {
    b: &'a [u8],
    pub pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(b: &'a [u8]) -> Self {
        Reader { b, pos: 0 }
    }
    pub fn take(&mut self, n: usize) -> std::result::Result<&'a [u8], String> {
        if self.b.len() - self.pos < n {
            return Err(format!(
                "truncated data: needs {n} bytes at offset {}",
                self.pos
            ));
        }
        let s = &self.b[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }
    /// A capacity for `n` items read from the input, each at least
    /// `min_bytes` long: never more than the bytes left can hold, so a
    /// count damaged or crafted to 4 billion reserves nothing it cannot
    /// fill (an unclamped `Vec::with_capacity(n)` aborts the process).
    pub fn capacity_for(&self, n: usize, min_bytes: usize) -> usize {
        n.min((self.b.len() - self.pos) / min_bytes.max(1))
    }
    pub fn u8(&mut self) -> std::result::Result<u8, String> {
        Ok(self.take(1)?[0])
    }
    pub fn u32(&mut self) -> std::result::Result<u32, String> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().unwrap()))
    }
    pub fn u64(&mut self) -> std::result::Result<u64, String> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().unwrap()))
    }
    pub fn str(&mut self) -> std::result::Result<String, String> {
        let n = self.u32()? as usize;
        String::from_utf8(self.take(n)?.to_vec()).map_err(|_| "invalid UTF-8 in a string".into())
    }
    pub fn values(&mut self) -> std::result::Result<Vec<Value>, String> {
        let n = self.u32()? as usize;
        let mut out = Vec::with_capacity(self.capacity_for(n, 1));
        for _ in 0..n {
            out.push(self.value()?);
        }
        Ok(out)
    }
    pub fn value(&mut self) -> std::result::Result<Value, String> {
        Ok(match self.u8()? {
            V_INT => Value::Int(self.u64()? as i64),
            V_TEXT => Value::from(self.str()?),
            V_NULL => Value::Null,
            V_BYTES => {
                let n = self.u32()? as usize;
                Value::Bytes(Arc::new(self.take(n)?.to_vec()))
            }
            V_FLOAT => Value::Float(f64::from_bits(self.u64()?)),
            V_BOOL => match self.u8()? {
                0 => Value::Bool(false),
                1 => Value::Bool(true),
                b => return Err(format!("invalid bool byte {b}")),
            },
            t => return Err(format!("unknown value tag {t}")),
        })
    }
    pub fn schema(&mut self) -> std::result::Result<Schema, String> {
        let name = self.str()?;
        let mut s = Schema::new(name);
        let n = self.u32()? as usize;
        let mut names = Vec::new();
        for _ in 0..n {
            let c = self.str()?;
            let b = self.u8()?;
            let ty = match b & !NULLABLE {
                0 => Type::Int,
                1 => Type::Text,
                2 => Type::Bytes,
                3 => Type::Float,
                4 => Type::Bool,
                _ => return Err(format!("unknown column type {b}")),
            };
            names.push(c.clone());
            s = if b & NULLABLE != 0 {
                s.nullable_column(c, ty)
            } else {
                s.column(c, ty)
            };
        }
        let npk = self.u32()? as usize;
        let mut pk = Vec::new();
        for _ in 0..npk {
            let i = self.u32()? as usize;
            pk.push(
                names
                    .get(i)
                    .ok_or_else(|| format!("primary-key column {i} out of range"))?
                    .as_str(),
            );
        }
        s.primary_key(&pk).validate().map_err(|e| e.to_string())
    }
    pub fn catalog(&mut self) -> std::result::Result<CatalogRecord, String> {
        match self.u8()? {
            1 => Ok(CatalogRecord::CreateTable {
                id: self.u32()?,
                schema: self.schema()?,
            }),
            5 => {
                let (id, schema) = (self.u32()?, self.schema()?);
                let point = match self.u8()? {
                    1 => PointLookups::Tree,
                    b => return Err(format!("unknown point-lookup kind {b}")),
                };
                Ok(CatalogRecord::CreateTable {
                    id,
                    schema: schema.point_lookups(point),
                })
            }
            2 => Ok(CatalogRecord::DropTable { id: self.u32()? }),
            6 => {
                let (table, id, schema) = (self.u32()?, self.u32()?, self.schema()?);
                let schema = match self.u8()? {
                    0 => schema,
                    1 => schema.point_lookups(PointLookups::Tree),
                    b => return Err(format!("unknown point-lookup kind {b}")),
                };
                let n = self.u32()? as usize;
                if n != schema.columns.len() {
                    return Err(format!(
                        "an alter names {n} column sources for {} columns",
                        schema.columns.len()
                    ));
                }
                let sources = (0..n)
                    .map(|_| self.u32())
                    .collect::<std::result::Result<_, _>>()?;
                Ok(CatalogRecord::AlterTable {
                    table,
                    id,
                    schema,
                    sources,
                })
            }
            3 => {
                let table = self.u32()?;
                let name = self.str()?;
                let n = self.u32()? as usize;
                let mut columns = Vec::new();
                for _ in 0..n {
                    columns.push(self.str()?);
                }
                let flags = self.u8()?;
                if flags > 3 {
                    return Err(format!("unknown index flags {flags}"));
                }
                let kind = if flags & 2 != 0 {
                    IndexKind::MvPbt
                } else {
                    IndexKind::Standard
                };
                Ok(CatalogRecord::CreateIndex {
                    table,
                    name,
                    columns,
                    unique: flags & 1 != 0,
                    kind,
                })
            }
            4 => Ok(CatalogRecord::DropIndex { name: self.str()? }),
            t => Err(format!("unknown catalog record tag {t}")),
        }
    }
}

/// Decodes a payload whose CRC already matched. A decoding failure here
/// means a bug or a CRC collision; the caller reports it as corruption.
pub fn decode_payload(p: &[u8]) -> std::result::Result<Payload, String> {
    let mut r = Reader::new(p);
    match r.u8()? {
        KIND_COMMIT => {
            let n = r.u32()? as usize;
            // An op is at least its kind, table and value count.
            let mut ops = Vec::with_capacity(r.capacity_for(n, 9));
            for _ in 0..n {
                ops.push(redo_op(&mut r)?);
            }
            Ok(Payload::Commit(ops))
        }
        KIND_CATALOG => Ok(Payload::Catalog(r.catalog()?)),
        KIND_SKIP => Ok(Payload::Skip),
        KIND_OP => {
            let prev = r.u64()?;
            Ok(Payload::Op {
                prev: (prev != NO_PREV_OP).then_some(prev),
                op: redo_op(&mut r)?,
            })
        }
        KIND_COMMIT_OPS => Ok(Payload::CommitOps {
            last_op: r.u64()?,
            ops: r.u32()?,
        }),
        k => Err(format!("unknown record kind {k}")),
    }
}

/// One op of a commit or operation record.
fn redo_op(r: &mut Reader<'_>) -> std::result::Result<RedoOp, String> {
    let op = r.u8()?;
    let table = r.u32()?;
    let vals = r.values()?;
    Ok(match op {
        OP_PUT => RedoOp::Put { table, row: vals },
        OP_DELETE => RedoOp::Delete { table, key: vals },
        OP_UPDATE => {
            let n = r.u32()? as usize;
            let mut cols = Vec::with_capacity(r.capacity_for(n, 5));
            for _ in 0..n {
                cols.push((r.u32()? as usize, r.value()?));
            }
            RedoOp::Update {
                table,
                key: vals,
                cols,
            }
        }
        o => return Err(format!("unknown redo op {o}")),
    })
}

/// The kind byte of a sealed record (its payload's first byte).
pub fn kind_of(record: &[u8]) -> Option<u8> {
    record.get(HEADER_BYTES).copied()
}

pub fn corrupt(what: impl std::fmt::Display) -> Error {
    Error::Corrupt(what.to_string())
}

/// Result alias for readers that report corruption.
pub type CResult<T> = Result<T>;

#[cfg(test)]
mod tests {
    use super::*;

    /// Per-operation logging's two kinds: an operation record (its
    /// transaction's previous one, or none, and one op) and a chained
    /// commit (the last operation record and the count).
    #[test]
    fn operation_and_chained_commit_records_round_trip() {
        for prev in [NO_PREV_OP, 4096] {
            let mut buf = Vec::new();
            let mut b = CommitBuilder::operation(&mut buf, prev);
            b.update(
                5,
                &[0],
                &[Value::Int(1), Value::from("new")],
                &[Value::Int(1), Value::from("old")],
            );
            b.finish();
            seal(&mut buf, 8192, 0);
            assert_eq!(buf.len() % 8, 0);
            assert_eq!(kind_of(&buf), Some(KIND_OP));
            let h = parse_header(&buf).unwrap();
            assert_eq!((h.total, h.lsn, h.cts), (buf.len(), 8192, 0));
            assert_eq!(
                decode_payload(&buf[HEADER_BYTES..]).unwrap(),
                Payload::Op {
                    prev: (prev != NO_PREV_OP).then_some(prev),
                    op: RedoOp::Update {
                        table: 5,
                        key: vec![Value::Int(1)],
                        cols: vec![(1, Value::from("new"))],
                    },
                }
            );
        }
        let mut buf = Vec::new();
        commit_ops_record(&mut buf, 8192, 3);
        seal(&mut buf, 9000 & !7, 77);
        assert_eq!(buf.len(), MIN_RECORD_BYTES + 8);
        assert_eq!(
            decode_payload(&buf[HEADER_BYTES..]).unwrap(),
            Payload::CommitOps {
                last_op: 8192,
                ops: 3
            }
        );
        // Cut short: an error, not a panic.
        assert!(decode_payload(&buf[HEADER_BYTES..HEADER_BYTES + 5]).is_err());
    }

    #[test]
    fn commit_record_round_trips() {
        let mut buf = Vec::new();
        let mut b = CommitBuilder::new(&mut buf);
        b.put(3, &[Value::Int(-7), Value::from("héllo")]);
        b.delete(4, &[Value::Int(1)]);
        b.update(
            5,
            &[1],
            &[Value::Int(1), Value::Int(2), Value::from("x")],
            &[Value::Int(0), Value::Int(2), Value::from("y")],
        );
        b.finish();
        seal(&mut buf, 4096, 77);
        assert_eq!(buf.len() % 8, 0);
        let h = parse_header(&buf).unwrap();
        assert_eq!((h.total, h.lsn, h.cts), (buf.len(), 4096, 77));
        assert_eq!(crc32c::crc32c(&buf[HEADER_BYTES..]), h.payload_crc);
        let p = decode_payload(&buf[HEADER_BYTES..]).unwrap();
        assert_eq!(
            p,
            Payload::Commit(vec![
                RedoOp::Put {
                    table: 3,
                    row: vec![Value::Int(-7), Value::from("héllo")]
                },
                RedoOp::Delete {
                    table: 4,
                    key: vec![Value::Int(1)]
                },
                RedoOp::Update {
                    table: 5,
                    key: vec![Value::Int(2)],
                    cols: vec![(0, Value::Int(1)), (2, Value::from("x"))]
                },
            ])
        );
    }

    #[test]
    fn catalog_record_round_trips_and_damaged_header_is_refused() {
        let schema = Schema::new("t")
            .column("a", Type::Text)
            .column("b", Type::Int)
            .primary_key(&["b", "a"])
            .validate()
            .unwrap();
        // A tree-only table keeps its kind (and the default's record is
        // the one it always was: tag 1).
        let tree = CatalogRecord::CreateTable {
            id: 10,
            schema: schema.clone().point_lookups(PointLookups::Tree),
        };
        let mut buf = Vec::new();
        catalog_record(&mut buf, &tree);
        seal(&mut buf, 0, 0);
        let p = decode_payload(&buf[HEADER_BYTES..]).unwrap();
        assert_eq!(p, Payload::Catalog(tree));
        let c = CatalogRecord::CreateTable { id: 9, schema };
        let mut plain = Vec::new();
        put_catalog(&mut plain, &c);
        assert_eq!(plain[0], 1);
        let mut buf = Vec::new();
        catalog_record(&mut buf, &c);
        seal(&mut buf, 0, 0);
        let p = decode_payload(&buf[HEADER_BYTES..]).unwrap();
        assert_eq!(p, Payload::Catalog(c));
        buf[9] ^= 1;
        assert!(parse_header(&buf).is_none());
        for c in [
            CatalogRecord::CreateIndex {
                table: 3,
                name: "by_ab".into(),
                columns: vec!["a".into(), "b".into()],
                unique: true,
                kind: IndexKind::Standard,
            },
            CatalogRecord::CreateIndex {
                table: 3,
                name: "by_b".into(),
                columns: vec!["b".into()],
                unique: false,
                kind: IndexKind::MvPbt,
            },
            CatalogRecord::DropIndex {
                name: "by_ab".into(),
            },
            CatalogRecord::AlterTable {
                table: 3,
                id: 11,
                schema: Schema::new("t2")
                    .column("b", Type::Int)
                    .nullable_column("c", Type::Text)
                    .primary_key(&["b"])
                    .validate()
                    .unwrap()
                    .point_lookups(PointLookups::Tree),
                sources: vec![1, NO_SOURCE],
            },
        ] {
            let mut buf = Vec::new();
            catalog_record(&mut buf, &c);
            seal(&mut buf, 0, 0);
            assert_eq!(
                decode_payload(&buf[HEADER_BYTES..]).unwrap(),
                Payload::Catalog(c)
            );
        }
    }

    /// Every value tag, and every column type with and without nullability,
    /// round trips; floats bit for bit (`-0.0`, a NaN payload).
    #[test]
    fn every_value_and_column_type_round_trips() {
        let odd_nan = f64::from_bits(0x7ff8_0000_0000_0123);
        let vals = vec![
            Value::Int(i64::MIN),
            Value::from("t\0x"),
            Value::Null,
            Value::from(vec![0u8, 0xFF, 0]),
            Value::from(Vec::<u8>::new()),
            Value::Float(-0.0),
            Value::Float(odd_nan),
            Value::Float(f64::NEG_INFINITY),
            Value::Bool(true),
            Value::Bool(false),
        ];
        let mut buf = Vec::new();
        put_values(&mut buf, &vals);
        let back = Reader::new(&buf).values().unwrap();
        assert_eq!(back, vals);
        let bits = |v: &[Value]| -> Vec<Option<u64>> {
            v.iter().map(|v| v.as_float().map(f64::to_bits)).collect()
        };
        assert_eq!(bits(&back), bits(&vals));

        let mut schema = Schema::new("all").column("k", Type::Int);
        for ty in Type::ALL {
            schema = schema
                .column(format!("{ty}"), ty)
                .nullable_column(format!("n{ty}"), ty);
        }
        let schema = schema.primary_key(&["k", "bytes"]).validate().unwrap();
        let mut buf = Vec::new();
        put_schema(&mut buf, &schema);
        assert_eq!(Reader::new(&buf).schema().unwrap(), schema);
    }

    /// The tags of `Int` and `Text` values and columns did not change, so
    /// logs and checkpoints written before the new types read as before.
    #[test]
    fn int_and_text_encodings_are_the_original_format() {
        let mut buf = Vec::new();
        put_values(&mut buf, &[Value::Int(5), Value::from("ab")]);
        assert_eq!(
            buf,
            [2, 0, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 1, 2, 0, 0, 0, b'a', b'b']
        );
        let s = Schema::new("t")
            .column("a", Type::Int)
            .column("b", Type::Text)
            .primary_key(&["a"])
            .validate()
            .unwrap();
        let mut buf = Vec::new();
        put_schema(&mut buf, &s);
        let mut old = vec![1, 0, 0, 0, b't', 2, 0, 0, 0];
        old.extend_from_slice(&[1, 0, 0, 0, b'a', 0, 1, 0, 0, 0, b'b', 1]);
        old.extend_from_slice(&[1, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(buf, old);
    }

    /// Unknown tags and bad bytes are errors (reported as corruption), not
    /// panics or guesses.
    #[test]
    fn unknown_value_tags_and_column_types_are_refused() {
        let one = |v: &[u8]| {
            let mut b = vec![1, 0, 0, 0];
            b.extend_from_slice(v);
            Reader::new(&b).values()
        };
        assert_eq!(one(&[6]).unwrap_err(), "unknown value tag 6");
        assert_eq!(one(&[0xFF]).unwrap_err(), "unknown value tag 255");
        assert_eq!(one(&[V_BOOL, 2]).unwrap_err(), "invalid bool byte 2");
        assert!(one(&[V_FLOAT, 0, 0]).is_err());
        assert!(one(&[V_BYTES, 9, 0, 0, 0, 1]).is_err());
        let mut b = Vec::new();
        put_str(&mut b, "t");
        b.extend_from_slice(&1u32.to_le_bytes());
        put_str(&mut b, "a");
        b.push(5 | NULLABLE);
        b.extend_from_slice(&0u32.to_le_bytes());
        assert_eq!(
            Reader::new(&b).schema().unwrap_err(),
            "unknown column type 133"
        );
    }

    #[test]
    fn short_or_garbage_payloads_are_errors_not_panics() {
        assert!(decode_payload(&[]).is_err());
        assert!(decode_payload(&[KIND_COMMIT, 5, 0, 0, 0, OP_PUT]).is_err());
        assert!(decode_payload(&[9]).is_err());
        assert!(decode_payload(&[KIND_COMMIT, 1, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 0]).is_err());
    }
}
