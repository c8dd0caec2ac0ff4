//! Values, rows, schemas and keys.
//!
//! A row is a boxed slice of [`Value`]s in schema order. `Text` values are
//! reference counted, so a new version made by an update shares every text
//! attribute it did not change with the version before it:
//!
//! ```text
//!   v2: [Int 7, Int 90, Text ─┐]      update(balance = 90)
//!                             ├──> "alice" (one allocation, refcount 2)
//!   v1: [Int 7, Int 100, Text ┘]
//! ```

use crate::error::{Error, Result};
use std::fmt;
use std::sync::Arc;

/// Column types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Type {
    /// A 64-bit signed integer.
    Int,
    /// A UTF-8 string, stored out of line and shared between versions.
    Text,
}

/// One attribute value. 16 bytes: `Text` is a thin pointer to a shared string.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Value {
    Int(i64),
    Text(Arc<String>),
}

impl Value {
    /// The value's type.
    pub fn ty(&self) -> Type {
        match self {
            Value::Int(_) => Type::Int,
            Value::Text(_) => Type::Text,
        }
    }
    /// The integer, if this is an `Int`.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            Value::Text(_) => None,
        }
    }
    /// The string, if this is a `Text`.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Value::Text(s) => Some(s.as_str()),
            Value::Int(_) => None,
        }
    }
    /// Bytes this value owns out of line (text payload), not counting sharing.
    pub(crate) fn heap_bytes(&self) -> usize {
        match self {
            Value::Int(_) => 0,
            Value::Text(s) => s.capacity() + 2 * std::mem::size_of::<usize>(),
        }
    }
}

impl fmt::Debug for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Int(i) => write!(f, "{i}"),
            Value::Text(s) => write!(f, "{s:?}"),
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Int(i) => write!(f, "{i}"),
            Value::Text(s) => write!(f, "{s}"),
        }
    }
}

impl From<i64> for Value {
    fn from(v: i64) -> Self {
        Value::Int(v)
    }
}
impl From<i32> for Value {
    fn from(v: i32) -> Self {
        Value::Int(v as i64)
    }
}
impl From<u32> for Value {
    fn from(v: u32) -> Self {
        Value::Int(v as i64)
    }
}
impl From<&str> for Value {
    fn from(v: &str) -> Self {
        Value::Text(Arc::new(v.to_string()))
    }
}
impl From<String> for Value {
    fn from(v: String) -> Self {
        Value::Text(Arc::new(v))
    }
}
impl From<Arc<String>> for Value {
    fn from(v: Arc<String>) -> Self {
        Value::Text(v)
    }
}

/// A row: values in schema order.
pub type Row = Vec<Value>;

/// A primary-key value: the key columns' values in primary-key order.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Key(pub Vec<Value>);

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.0)
    }
}
impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("(")?;
        for (i, v) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{v:?}")?;
        }
        f.write_str(")")
    }
}

impl From<i64> for Key {
    fn from(v: i64) -> Self {
        Key(vec![Value::Int(v)])
    }
}
impl From<Vec<Value>> for Key {
    fn from(v: Vec<Value>) -> Self {
        Key(v)
    }
}

/// Builds a [`Row`] from expressions convertible into [`Value`].
#[macro_export]
macro_rules! row {
    ($($v:expr),* $(,)?) => { vec![$($crate::Value::from($v)),*] };
}

/// Builds a [`Key`] from expressions convertible into [`Value`].
#[macro_export]
macro_rules! key {
    ($($v:expr),* $(,)?) => { $crate::Key(vec![$($crate::Value::from($v)),*]) };
}

/// A column definition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    pub name: String,
    pub ty: Type,
}

/// A table schema: a name, typed columns and a primary key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schema {
    pub name: String,
    pub columns: Vec<Column>,
    /// Column positions of the primary key, in key order.
    pub primary_key: Vec<usize>,
    pending_pk: Vec<String>,
}

impl Schema {
    /// Starts a schema for table `name`.
    pub fn new(name: impl Into<String>) -> Self {
        Schema {
            name: name.into(),
            columns: Vec::new(),
            primary_key: Vec::new(),
            pending_pk: Vec::new(),
        }
    }
    /// Adds a column.
    pub fn column(mut self, name: impl Into<String>, ty: Type) -> Self {
        self.columns.push(Column {
            name: name.into(),
            ty,
        });
        self
    }
    /// Names the primary-key columns (checked by `Database::create_table`).
    pub fn primary_key(mut self, cols: &[&str]) -> Self {
        self.pending_pk = cols.iter().map(|s| s.to_string()).collect();
        self
    }

    /// Resolves and checks the schema; called by `create_table`.
    pub(crate) fn validate(mut self) -> Result<Self> {
        if self.name.is_empty() {
            return Err(Error::Schema("table name is empty".into()));
        }
        if self.columns.is_empty() {
            return Err(Error::Schema(format!("table {} has no columns", self.name)));
        }
        for (i, c) in self.columns.iter().enumerate() {
            if self.columns[..i].iter().any(|o| o.name == c.name) {
                return Err(Error::Schema(format!(
                    "table {} has two columns named {}",
                    self.name, c.name
                )));
            }
        }
        if self.pending_pk.is_empty() && self.primary_key.is_empty() {
            return Err(Error::Schema(format!(
                "table {} has no primary key",
                self.name
            )));
        }
        if !self.pending_pk.is_empty() {
            let mut pk = Vec::new();
            for name in &self.pending_pk {
                let idx = self.column_index(name)?;
                if pk.contains(&idx) {
                    return Err(Error::Schema(format!(
                        "primary key of {} names {} twice",
                        self.name, name
                    )));
                }
                pk.push(idx);
            }
            self.primary_key = pk;
            self.pending_pk.clear();
        }
        Ok(self)
    }

    /// Position of column `name`, or a schema error naming the table.
    pub fn column_index(&self, name: &str) -> Result<usize> {
        self.columns
            .iter()
            .position(|c| c.name == name)
            .ok_or_else(|| Error::Schema(format!("table {} has no column {}", self.name, name)))
    }

    /// Checks a full row against the schema (arity and types).
    pub(crate) fn check_row(&self, row: &[Value]) -> Result<()> {
        if row.len() != self.columns.len() {
            return Err(Error::Schema(format!(
                "table {} has {} columns, row has {}",
                self.name,
                self.columns.len(),
                row.len()
            )));
        }
        for (v, c) in row.iter().zip(&self.columns) {
            self.check_value(c, v)?;
        }
        Ok(())
    }

    pub(crate) fn check_value(&self, c: &Column, v: &Value) -> Result<()> {
        if v.ty() != c.ty {
            return Err(Error::Schema(format!(
                "column {}.{} is {:?}, got {:?} value {:?}",
                self.name,
                c.name,
                c.ty,
                v.ty(),
                v
            )));
        }
        Ok(())
    }

    /// Checks a key against the primary key's arity and types.
    pub(crate) fn check_key(&self, key: &Key) -> Result<()> {
        if key.0.len() != self.primary_key.len() {
            return Err(Error::Schema(format!(
                "primary key of {} has {} columns, key has {}",
                self.name,
                self.primary_key.len(),
                key.0.len()
            )));
        }
        for (v, &ci) in key.0.iter().zip(&self.primary_key) {
            self.check_value(&self.columns[ci], v)?;
        }
        Ok(())
    }

    /// The primary key of a row (the row must have been checked).
    pub(crate) fn key_of(&self, row: &[Value]) -> Key {
        Key(self.primary_key.iter().map(|&i| row[i].clone()).collect())
    }

    /// True when the primary key is a single `Int` column, which the primary
    /// index stores as a plain `u64` instead of a byte string.
    pub(crate) fn int_key(&self) -> bool {
        self.primary_key.len() == 1 && self.columns[self.primary_key[0]].ty == Type::Int
    }
}

/// Names a column either by name or by position; `update` accepts both.
pub trait ColumnRef {
    fn resolve(&self, schema: &Schema) -> Result<usize>;
}
impl ColumnRef for &str {
    fn resolve(&self, schema: &Schema) -> Result<usize> {
        schema.column_index(self)
    }
}
impl ColumnRef for String {
    fn resolve(&self, schema: &Schema) -> Result<usize> {
        schema.column_index(self)
    }
}
impl ColumnRef for usize {
    fn resolve(&self, schema: &Schema) -> Result<usize> {
        if *self < schema.columns.len() {
            Ok(*self)
        } else {
            Err(Error::Schema(format!(
                "table {} has no column #{} (it has {})",
                schema.name,
                self,
                schema.columns.len()
            )))
        }
    }
}
