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
//!
//! `Bytes` values are shared the same way. A column is typed and, unless
//! declared nullable, never holds `Null`; the schema checks every value
//! written ([`Error::TypeMismatch`], [`Error::NullNotAllowed`]), so storage,
//! indexes and the log only ever see values that fit their column.

use crate::error::{Error, Result};
use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

pub use crate::types::Type;

/// One attribute value. 16 bytes: `Text` and `Bytes` are thin pointers to
/// shared buffers.
///
/// Values are totally ordered, and that order is the one the key encoding
/// (`index::key`) preserves: `Null` sorts before every other value, values
/// of one type compare naturally (`Text` and `Bytes` byte-wise, `false <
/// true`), and floats compare by IEEE 754 total order with two
/// canonicalisations, so that `Eq`, `Ord`, `Hash` and the key bytes agree:
/// `-0.0 == 0.0`, and every NaN equals every other NaN and sorts after
/// `+inf`. (Values of different types only meet in a column when one is
/// `Null`; otherwise they order by type, in declaration order.)
#[derive(Clone)]
pub enum Value {
    /// The absence of a value, in a column declared nullable.
    Null,
    Int(i64),
    Text(Text),
    Bytes(Arc<Vec<u8>>),
    Float(f64),
    Bool(bool),
}

/// A shared, immutable string: the reference count, the length and the
/// bytes in one allocation (`triomphe::ThinArc`), held through one 8-byte
/// pointer, so that a [`Value`] stays 16 bytes and reading a text is one
/// miss, not two (an `Arc<String>` is a count block pointing at a second
/// buffer):
///
/// ```text
///  Value::Text ──> [ count | len | b o b ... ]     one allocation
/// ```
///
/// Cloning adds a count (an update shares every text it does not change);
/// it compares, hashes and orders as its `str`.
#[derive(Clone)]
pub struct Text(triomphe::ThinArc<(), u8>);

impl Text {
    /// The count and the length in front of the bytes.
    pub(crate) const HEADER_BYTES: usize = 2 * std::mem::size_of::<usize>();

    /// A new text holding a copy of `s`.
    pub fn new(s: &str) -> Text {
        Text(triomphe::ThinArc::from_header_and_slice((), s.as_bytes()))
    }

    pub fn as_str(&self) -> &str {
        // SAFETY: a `Text` is only ever made from a `str` (`new`), and its
        // bytes never change.
        unsafe { std::str::from_utf8_unchecked(&self.0.slice) }
    }

    /// The allocation's first byte (the count's line), for prefetching.
    #[inline]
    pub(crate) fn heap_ptr(&self) -> *const u8 {
        self.0.heap_ptr() as *const u8
    }

    /// Gives up this handle's count as a raw word (see [`Text::from_raw`]).
    pub(crate) fn into_raw(self) -> u64 {
        triomphe::ThinArc::into_raw(self.0) as u64
    }

    /// Takes back a count given up by [`Text::into_raw`].
    ///
    /// # Safety
    /// `bits` came from `into_raw`, and its count is not taken back twice.
    pub(crate) unsafe fn from_raw(bits: u64) -> Text {
        // SAFETY: per the contract.
        Text(unsafe { triomphe::ThinArc::from_raw(bits as *const std::ffi::c_void) })
    }

    /// Runs `f` on the text behind a raw word without touching its count.
    ///
    /// # Safety
    /// `bits` came from `into_raw` and its count is held elsewhere for the
    /// whole call.
    pub(crate) unsafe fn with_raw<R>(bits: u64, f: impl FnOnce(&Text) -> R) -> R {
        // SAFETY: per the contract; the handle is never dropped, so the
        // count it stands for stays with its owner.
        let t = std::mem::ManuallyDrop::new(unsafe { Text::from_raw(bits) });
        f(&t)
    }

    /// Handles on this text's allocation (tests of sharing and freeing).
    pub fn strong_count(t: &Text) -> usize {
        triomphe::ThinArc::strong_count(&t.0)
    }

    /// Whether two handles share one allocation.
    pub fn ptr_eq(a: &Text, b: &Text) -> bool {
        a.heap_ptr() == b.heap_ptr()
    }
}

impl std::ops::Deref for Text {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}
impl AsRef<str> for Text {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}
impl std::borrow::Borrow<str> for Text {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}
impl PartialEq for Text {
    fn eq(&self, other: &Text) -> bool {
        self.as_str() == other.as_str()
    }
}
impl Eq for Text {}
impl PartialEq<str> for Text {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}
impl PartialEq<&str> for Text {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}
impl Ord for Text {
    fn cmp(&self, other: &Text) -> Ordering {
        self.as_str().cmp(other.as_str())
    }
}
impl PartialOrd for Text {
    fn partial_cmp(&self, other: &Text) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Hash for Text {
    fn hash<H: Hasher>(&self, h: &mut H) {
        self.as_str().hash(h)
    }
}
impl fmt::Debug for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}
impl fmt::Display for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
impl From<&str> for Text {
    fn from(s: &str) -> Text {
        Text::new(s)
    }
}
impl From<String> for Text {
    fn from(s: String) -> Text {
        Text::new(&s)
    }
}

/// Maps a float to a `u64` whose unsigned order is the float order of
/// [`Value`]: NaNs become one NaN and `-0.0` becomes `0.0`, then the sign
/// bit is flipped for positives and every bit inverted for negatives (IEEE
/// total order). The key encoding stores exactly these bits.
#[inline]
pub(crate) fn float_to_ordered(f: f64) -> u64 {
    let f = if f.is_nan() {
        f64::NAN
    } else if f == 0.0 {
        0.0
    } else {
        f
    };
    let b = f.to_bits();
    if b >> 63 == 1 {
        !b
    } else {
        b | 1 << 63
    }
}

/// The rank ([`Value::rank`]) of every value of type `t`.
pub(crate) fn type_rank(t: Type) -> u8 {
    match t {
        Type::Int => 1,
        Type::Text => 2,
        Type::Bytes => 3,
        Type::Float => 4,
        Type::Bool => 5,
    }
}

impl Value {
    /// The value's type; `None` for `Null`.
    pub fn ty(&self) -> Option<Type> {
        match self {
            Value::Null => None,
            Value::Int(_) => Some(Type::Int),
            Value::Text(_) => Some(Type::Text),
            Value::Bytes(_) => Some(Type::Bytes),
            Value::Float(_) => Some(Type::Float),
            Value::Bool(_) => Some(Type::Bool),
        }
    }
    /// Position in the cross-type order (also the key encoding's tag).
    #[inline(always)]
    pub(crate) fn rank(&self) -> u8 {
        match self {
            Value::Null => 0,
            Value::Int(_) => 1,
            Value::Text(_) => 2,
            Value::Bytes(_) => 3,
            Value::Float(_) => 4,
            Value::Bool(_) => 5,
        }
    }
    /// True for `Null`.
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }
    /// The integer, if this is an `Int`.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            _ => None,
        }
    }
    /// The string, if this is a `Text`.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Value::Text(s) => Some(s.as_str()),
            _ => None,
        }
    }
    /// The bytes, if this is a `Bytes`.
    pub fn as_bytes(&self) -> Option<&[u8]> {
        match self {
            Value::Bytes(b) => Some(b.as_slice()),
            _ => None,
        }
    }
    /// The float, if this is a `Float` (an `Int` is not converted).
    pub fn as_float(&self) -> Option<f64> {
        match self {
            Value::Float(f) => Some(*f),
            _ => None,
        }
    }
    /// The boolean, if this is a `Bool`.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }
    /// Bytes this value owns out of line (a text or byte-string payload and
    /// its `Arc` counts), not counting sharing.
    pub(crate) fn heap_bytes(&self) -> usize {
        match self {
            Value::Null | Value::Int(_) | Value::Float(_) | Value::Bool(_) => 0,
            Value::Text(s) => s.len() + Text::HEADER_BYTES,
            Value::Bytes(b) => b.capacity() + 2 * std::mem::size_of::<usize>(),
        }
    }
    /// Whether this value owns an out-of-line buffer (see `heap_bytes`).
    pub(crate) fn has_heap(&self) -> bool {
        matches!(self, Value::Text(_) | Value::Bytes(_))
    }
}

impl Ord for Value {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (Value::Int(a), Value::Int(b)) => a.cmp(b),
            (Value::Text(a), Value::Text(b)) => a.cmp(b),
            (Value::Bytes(a), Value::Bytes(b)) => a.cmp(b),
            (Value::Float(a), Value::Float(b)) => float_to_ordered(*a).cmp(&float_to_ordered(*b)),
            (Value::Bool(a), Value::Bool(b)) => a.cmp(b),
            // Two nulls, or two types: the type order (nulls first).
            _ => self.rank().cmp(&other.rank()),
        }
    }
}
impl PartialOrd for Value {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl PartialEq for Value {
    /// `cmp(..) == Equal`, with the common same-type cases spelled out
    /// (a string compare checks lengths first).
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Value::Int(a), Value::Int(b)) => a == b,
            (Value::Text(a), Value::Text(b)) => a == b,
            (Value::Bytes(a), Value::Bytes(b)) => a == b,
            _ => self.cmp(other) == Ordering::Equal,
        }
    }
}
impl Eq for Value {}
impl Hash for Value {
    fn hash<H: Hasher>(&self, h: &mut H) {
        self.rank().hash(h);
        match self {
            Value::Null => {}
            Value::Int(i) => i.hash(h),
            Value::Text(s) => s.hash(h),
            Value::Bytes(b) => b.hash(h),
            // Equal floats (per `Ord`) have equal ordered bits.
            Value::Float(f) => float_to_ordered(*f).hash(h),
            Value::Bool(b) => b.hash(h),
        }
    }
}

impl fmt::Debug for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Null => f.write_str("NULL"),
            Value::Int(i) => write!(f, "{i}"),
            Value::Text(s) => write!(f, "{s:?}"),
            Value::Bytes(b) => write!(f, "b\"{}\"", b.escape_ascii()),
            Value::Float(x) => write!(f, "{x:?}"),
            Value::Bool(b) => write!(f, "{b}"),
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Text(s) => write!(f, "{s}"),
            Value::Null | Value::Int(_) | Value::Bytes(_) | Value::Float(_) | Value::Bool(_) => {
                write!(f, "{self:?}")
            }
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
        Value::Text(Text::new(v))
    }
}
impl From<String> for Value {
    fn from(v: String) -> Self {
        Value::Text(Text::new(&v))
    }
}
impl From<Text> for Value {
    fn from(v: Text) -> Self {
        Value::Text(v)
    }
}
impl From<Vec<u8>> for Value {
    fn from(v: Vec<u8>) -> Self {
        Value::Bytes(Arc::new(v))
    }
}
impl From<&[u8]> for Value {
    fn from(v: &[u8]) -> Self {
        Value::Bytes(Arc::new(v.to_vec()))
    }
}
impl<const N: usize> From<&[u8; N]> for Value {
    fn from(v: &[u8; N]) -> Self {
        Value::Bytes(Arc::new(v.to_vec()))
    }
}
impl From<Arc<Vec<u8>>> for Value {
    fn from(v: Arc<Vec<u8>>) -> Self {
        Value::Bytes(v)
    }
}
impl From<f64> for Value {
    fn from(v: f64) -> Self {
        Value::Float(v)
    }
}
impl From<bool> for Value {
    fn from(v: bool) -> Self {
        Value::Bool(v)
    }
}
/// `None` is `Null`; `Some(x)` is `x`'s value.
impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(v: Option<T>) -> Self {
        v.map_or(Value::Null, Into::into)
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
    /// Whether the column admits `Value::Null` (never for a primary-key
    /// column).
    pub nullable: bool,
}

/// The most columns a table has (a version counts its values in 16 bits).
pub const MAX_COLUMNS: usize = 65_535;

/// How a table's primary index answers point lookups
/// ([`Schema::point_lookups`]). Range scans always use its ordered tree.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum PointLookups {
    /// A hash table beside the ordered tree (the default): a lookup is
    /// about one cache miss, and it hints where the row's newest version
    /// is; every insert also writes a hash entry, somewhere in a table
    /// that grows with the rows.
    #[default]
    Hash,
    /// The ordered tree alone: a lookup descends the tree (a few cache
    /// misses), an insert writes nothing more. For tables that are mostly
    /// appended to and scanned, like TPC-C's orders and order lines: there
    /// the hash entry cost an insert a miss of its own, about a seventh of
    /// NewOrder + Payment's time (docs/PERFORMANCE.md).
    Tree,
}

/// A table schema: a name, typed columns and a primary key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schema {
    pub name: String,
    pub columns: Vec<Column>,
    /// Column positions of the primary key, in key order.
    pub primary_key: Vec<usize>,
    /// How the primary index answers point lookups.
    pub point_lookups: PointLookups,
    pending_pk: Vec<String>,
}

impl Schema {
    /// The first way `other` (a validated schema of the same table) differs
    /// from this one, in words, this schema's side first; `None` if they
    /// are the same.
    pub fn difference(&self, other: &Schema) -> Option<String> {
        let col = |c: &Column| {
            format!(
                "{} {}{}",
                c.name,
                c.ty,
                if c.nullable { " (nullable)" } else { "" }
            )
        };
        for (i, (a, b)) in self.columns.iter().zip(&other.columns).enumerate() {
            if a != b {
                return Some(format!(
                    "column {} is {} in the table, {} in the schema given",
                    i + 1,
                    col(a),
                    col(b)
                ));
            }
        }
        let names = |cols: &[Column]| {
            cols.iter()
                .map(|c| c.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let (n, m) = (self.columns.len(), other.columns.len());
        if n != m {
            let (more, extra) = if n > m {
                ("the table", &self.columns[m..])
            } else {
                ("the schema given", &other.columns[n..])
            };
            return Some(format!(
                "the table has {n} columns, the schema given {m}; {more} also has {}",
                names(extra)
            ));
        }
        if self.primary_key != other.primary_key {
            let pk = |s: &Schema| {
                s.primary_key
                    .iter()
                    .map(|&i| s.columns[i].name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            return Some(format!(
                "the primary key is ({}) in the table, ({}) in the schema given",
                pk(self),
                pk(other)
            ));
        }
        if self.point_lookups != other.point_lookups {
            return Some(format!(
                "point lookups are {:?} in the table, {:?} in the schema given",
                self.point_lookups, other.point_lookups
            ));
        }
        None
    }

    /// Starts a schema for table `name`.
    pub fn new(name: impl Into<String>) -> Self {
        Schema {
            name: name.into(),
            columns: Vec::new(),
            primary_key: Vec::new(),
            point_lookups: PointLookups::Hash,
            pending_pk: Vec::new(),
        }
    }
    /// Adds a column that never holds `Null`.
    pub fn column(mut self, name: impl Into<String>, ty: Type) -> Self {
        self.columns.push(Column {
            name: name.into(),
            ty,
            nullable: false,
        });
        self
    }
    /// Adds a column that may hold `Value::Null` (it cannot be part of the
    /// primary key; in a secondary index nulls sort first).
    pub fn nullable_column(mut self, name: impl Into<String>, ty: Type) -> Self {
        self.columns.push(Column {
            name: name.into(),
            ty,
            nullable: true,
        });
        self
    }
    /// How the primary index answers point lookups (default
    /// [`PointLookups::Hash`]).
    pub fn point_lookups(mut self, p: PointLookups) -> Self {
        self.point_lookups = p;
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
        if self.columns.len() > MAX_COLUMNS {
            return Err(Error::Schema(format!(
                "table {} has {} columns; at most {MAX_COLUMNS} are allowed",
                self.name,
                self.columns.len(),
            )));
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
        } else {
            // `primary_key` is a public field: positions set directly skip
            // the name resolution above, so they are checked here, before
            // anything indexes `columns` with them.
            for (i, &ci) in self.primary_key.iter().enumerate() {
                if ci >= self.columns.len() {
                    return Err(Error::Schema(format!(
                        "primary key of {} names column position {ci}; the table has {} columns",
                        self.name,
                        self.columns.len()
                    )));
                }
                if self.primary_key[..i].contains(&ci) {
                    return Err(Error::Schema(format!(
                        "primary key of {} names {} twice",
                        self.name, self.columns[ci].name
                    )));
                }
            }
        }
        // A key identifies one row; a null one would not (and a null
        // never equals anything in SQL), so key columns are never null.
        if let Some(c) = self
            .primary_key
            .iter()
            .map(|&i| &self.columns[i])
            .find(|c| c.nullable)
        {
            return Err(Error::Schema(format!(
                "primary-key column {}.{} is nullable; key columns cannot hold nulls",
                self.name, c.name
            )));
        }
        Ok(self)
    }

    /// Position of column `name`, or a schema error naming the table.
    pub fn column_index(&self, name: &str) -> Result<usize> {
        self.columns
            .iter()
            .position(|c| c.name == name)
            .ok_or_else(|| Error::NoSuchColumn {
                table: self.name.clone(),
                column: name.to_string(),
            })
    }

    /// The rank ([`Value::rank`]) a value of each column's type has, in
    /// column order: what [`Schema::check_row_by`] compares a row with.
    pub(crate) fn column_ranks(&self) -> Box<[u8]> {
        self.columns.iter().map(|c| type_rank(c.ty)).collect()
    }

    /// [`Schema::check_row`] against the column ranks (`column_ranks`):
    /// a row whose every value has its column's type passes with one byte
    /// compared a value; anything else (a null, a wrong type or arity)
    /// goes to `check_row`, which decides and builds the error. (Checking
    /// each value's type against the column's took an insert about 150
    /// instructions for TPC-C's rows of ten columns.)
    #[inline]
    pub(crate) fn check_row_by(&self, ranks: &[u8], row: &[Value]) -> Result<()> {
        if row.len() == ranks.len() && row.iter().zip(ranks).all(|(v, &r)| v.rank() == r) {
            return Ok(());
        }
        self.check_row(row)
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

    /// Checks one value against its column: `Error::NullNotAllowed` for a
    /// null in a column not declared nullable, `Error::TypeMismatch` for a
    /// value of another type.
    #[inline]
    pub(crate) fn check_value(&self, c: &Column, v: &Value) -> Result<()> {
        // Every read and write checks its key and values: the matching
        // type answers inline, the error is built out of line.
        if v.ty() == Some(c.ty) {
            return Ok(());
        }
        self.check_value_slow(c, v)
    }

    /// The rest of `check_value`: a null (allowed only where declared
    /// nullable) or an error.
    #[cold]
    #[inline(never)]
    fn check_value_slow(&self, c: &Column, v: &Value) -> Result<()> {
        match v.ty() {
            None if c.nullable => Ok(()),
            None => Err(Error::NullNotAllowed {
                table: self.name.clone(),
                column: c.name.clone(),
            }),
            Some(t) if t == c.ty => Ok(()),
            Some(found) => Err(Error::TypeMismatch {
                table: self.name.clone(),
                column: c.name.clone(),
                expected: c.ty,
                found,
            }),
        }
    }

    /// Checks a key against the primary key's arity and types.
    #[inline]
    pub(crate) fn check_key(&self, key: &Key) -> Result<()> {
        // (Key columns are never nullable: a match of every type is all.)
        if key.0.len() == self.primary_key.len()
            && key
                .0
                .iter()
                .zip(&self.primary_key)
                .all(|(v, &ci)| v.ty() == Some(self.columns[ci].ty))
        {
            return Ok(());
        }
        self.check_key_slow(key)
    }

    /// The rest of `check_key`: always an error (key columns are never
    /// nullable), built here.
    #[cold]
    #[inline(never)]
    fn check_key_slow(&self, key: &Key) -> Result<()> {
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
    #[inline]
    fn resolve(&self, schema: &Schema) -> Result<usize> {
        schema.column_index(self)
    }
}
impl ColumnRef for String {
    #[inline]
    fn resolve(&self, schema: &Schema) -> Result<usize> {
        schema.column_index(self)
    }
}
impl ColumnRef for usize {
    #[inline]
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::hash_map::DefaultHasher;

    /// The fast type check (`check_row_by`, one rank compared a value)
    /// answers as `check_row` does for every type, a null in a nullable
    /// column and out of one, a wrong type and a wrong arity: a value of
    /// each type has its type's rank.
    #[test]
    fn the_rank_check_answers_as_the_type_check() {
        let sample = |t: Type| match t {
            Type::Int => Value::Int(1),
            Type::Text => Value::from("x"),
            Type::Bytes => Value::Bytes(Arc::new(vec![1])),
            Type::Float => Value::Float(0.5),
            Type::Bool => Value::Bool(true),
        };
        let mut schema = Schema::new("t").nullable_column("n", Type::Int);
        for (i, t) in Type::ALL.into_iter().enumerate() {
            assert_eq!(sample(t).rank(), type_rank(t), "{t:?}");
            schema = schema.column(format!("c{i}"), t);
        }
        let ranks = schema.column_ranks();
        let good: Vec<Value> = std::iter::once(Value::Int(0))
            .chain(Type::ALL.into_iter().map(sample))
            .collect();
        let mut rows = vec![good.clone(), good[..3].to_vec()];
        let mut null_ok = good.clone();
        null_ok[0] = Value::Null;
        rows.push(null_ok);
        for i in 1..good.len() {
            let mut null_bad = good.clone();
            null_bad[i] = Value::Null;
            rows.push(null_bad);
            let mut wrong = good.clone();
            wrong[i] = sample(Type::ALL[i % Type::ALL.len()]);
            rows.push(wrong);
        }
        for row in &rows {
            let by_rank = schema.check_row_by(&ranks, row);
            let by_type = schema.check_row(row);
            assert_eq!(by_rank.is_ok(), by_type.is_ok(), "{row:?}");
            assert_eq!(format!("{by_rank:?}"), format!("{by_type:?}"), "{row:?}");
        }
        assert!(schema.check_row_by(&ranks, &good).is_ok());
        assert!(rows.iter().filter(|r| schema.check_row(r).is_err()).count() >= 10);
    }

    fn hash_of(x: &impl Hash) -> u64 {
        let mut h = DefaultHasher::new();
        x.hash(&mut h);
        h.finish()
    }

    /// A text is one thin pointer to its count, length and bytes: a value
    /// stays 16 bytes; it reads, orders and hashes as its `str`; a raw word
    /// taken from it gives the count back once, and borrowing through the
    /// word leaves the count alone.
    #[test]
    fn texts_are_thin_shared_strings() {
        assert_eq!(std::mem::size_of::<Text>(), 8);
        assert_eq!(std::mem::size_of::<Value>(), 16);
        let t = Text::new("bob");
        assert_eq!(t.as_str(), "bob");
        assert_eq!(&*Text::new(""), "");
        assert!(Text::new("ab") < Text::new("b"));
        assert_eq!(hash_of(&Text::new("bob")), hash_of(&"bob"));
        assert_eq!(Value::from("bob"), Value::Text(t.clone()));
        assert_eq!(Text::strong_count(&t), 1);
        let u = t.clone();
        assert!(Text::ptr_eq(&t, &u) && !Text::ptr_eq(&t, &Text::new("bob")));
        assert_eq!(Text::strong_count(&t), 2);
        let raw = u.into_raw();
        // SAFETY: `raw` came from `into_raw`; its count is held until
        // `from_raw` below takes it back, once.
        unsafe {
            assert!(Text::with_raw(raw, |x| x == "bob"));
            assert_eq!(Text::strong_count(&t), 2);
            let c = Text::with_raw(raw, Text::clone);
            assert_eq!(Text::strong_count(&t), 3);
            drop(c);
            drop(Text::from_raw(raw));
        }
        assert_eq!(Text::strong_count(&t), 1);
        // Out of line: the count, the length and the bytes.
        let v = Value::Text(t);
        assert_eq!(v.heap_bytes(), 3 + Text::HEADER_BYTES);
    }
}
