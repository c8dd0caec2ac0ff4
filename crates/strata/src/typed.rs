//! Columns by name, as Rust types: reading `row[1].as_int().unwrap()` by
//! position breaks silently when a column moves, and panics on a null.
//! Here a column is named and the value converts into the type asked for,
//! or the error says which column, what it holds and what was asked:
//!
//! ```text
//!  t.named(row).get::<i64>("balance")
//!      "balance" ──Schema::column_index──> 2 ──row[2]──> Value::Int(7) ──FromValue──> 7i64
//!      a Text there:  Error::ColumnValue { column: "acct.balance", found: "text", wanted: "i64" }
//!      a null there:  the same, unless asked for an Option<T> (then None)
//! ```
//!
//! Integers convert into every Rust integer type they fit (`u32`, `u64`,
//! `usize`, ...; a value out of the type's range is an error, never a
//! wrapped number), floats into `f64` and `f32`. The other direction is
//! `Value`'s `From` impls (`Option<T>` for a nullable column), plus
//! `TryFrom` for `u64` and `usize`, whose
//! largest values do not fit the column's `i64`.
//!
//! Invariant this module owns: a conversion never loses or invents
//! information silently: no truncation, no wrap, no null read as a default.

use crate::error::{Error, Result};
use crate::table::Table;
use crate::value::{ColumnRef, Row, Text, Value};
use std::sync::Arc;

/// A Rust type a column's value converts into ([`NamedRow::get`],
/// [`Table::value`]). `Err` carries the value's kind when it does not
/// convert, and why, for the error to name.
pub trait FromValue: Sized {
    /// The type's name in messages (`i64`, `String`, `Option<u32>`).
    const WANTED: &'static str;
    /// The value as this type, or why not.
    fn from_value(v: &Value) -> std::result::Result<Self, &'static str>;
}

/// The kind of `v` in messages.
fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Int(_) => "an integer",
        Value::Text(_) => "text",
        Value::Bytes(_) => "bytes",
        Value::Float(_) => "a float",
        Value::Bool(_) => "a bool",
    }
}

macro_rules! from_int {
    ($($t:ty),*) => {$(
        impl FromValue for $t {
            const WANTED: &'static str = stringify!($t);
            fn from_value(v: &Value) -> std::result::Result<Self, &'static str> {
                match v {
                    Value::Int(i) => <$t>::try_from(*i).map_err(|_| "an integer out of its range"),
                    other => Err(kind(other)),
                }
            }
        }
    )*};
}
from_int!(i64, i32, i16, i8, u64, u32, u16, u8, usize, isize);

macro_rules! from_variant {
    ($($t:ty, $name:literal, $variant:ident($x:ident) => $e:expr;)*) => {$(
        impl FromValue for $t {
            const WANTED: &'static str = $name;
            fn from_value(v: &Value) -> std::result::Result<Self, &'static str> {
                match v {
                    Value::$variant($x) => Ok($e),
                    other => Err(kind(other)),
                }
            }
        }
    )*};
}
from_variant! {
    f64, "f64", Float(f) => *f;
    bool, "bool", Bool(b) => *b;
    String, "String", Text(t) => t.as_str().to_string();
    Text, "Text", Text(t) => t.clone();
    Vec<u8>, "Vec<u8>", Bytes(b) => b.to_vec();
    Arc<Vec<u8>>, "Arc<Vec<u8>>", Bytes(b) => Arc::clone(b);
}

impl FromValue for f32 {
    const WANTED: &'static str = "f32";
    fn from_value(v: &Value) -> std::result::Result<Self, &'static str> {
        match v {
            // A finite f64 beyond f32's range would become infinite.
            Value::Float(f) if f.is_finite() && f.abs() > f32::MAX as f64 => {
                Err("a float out of its range")
            }
            Value::Float(f) => Ok(*f as f32),
            other => Err(kind(other)),
        }
    }
}

/// A nullable column: `None` for a null, else the value as `T`.
impl<T: FromValue> FromValue for Option<T> {
    const WANTED: &'static str = T::WANTED;
    fn from_value(v: &Value) -> std::result::Result<Self, &'static str> {
        match v {
            Value::Null => Ok(None),
            v => T::from_value(v).map(Some),
        }
    }
}

impl Table {
    /// Column `column` (a name or a position) of `row`, a row of this
    /// table, as a `T`. [`Error::Schema`] for an unknown column or a row
    /// of another width, [`Error::ColumnValue`] when the value does not
    /// convert (another type, a null into a non-`Option`, an integer out
    /// of `T`'s range).
    ///
    /// ```
    /// # use strata::{Database, Options, Schema, Type, row, key};
    /// let db = Database::open(Options::default())?;
    /// let t = db.create_table(
    ///     Schema::new("acct").column("id", Type::Int).column("owner", Type::Text)
    ///         .column("balance", Type::Int).primary_key(&["id"]),
    /// )?;
    /// db.run(|x| x.insert(&t, row![1i64, "ann", 70i64]))?;
    /// let row = db.run_read_only(|x| x.get(&t, &key![1i64]))?.expect("row 1");
    /// assert_eq!(t.value::<u32>(&row, "balance")?, 70);
    /// assert_eq!(t.value::<String>(&row, "owner")?, "ann");
    /// assert!(t.value::<i64>(&row, "owner").is_err());
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn value<T: FromValue>(&self, row: &[Value], column: impl ColumnRef) -> Result<T> {
        let schema = self.schema();
        let i = column.resolve(schema)?;
        if row.len() != schema.columns.len() {
            return Err(Error::Schema(format!(
                "a row of {} values is not a row of {} ({} columns)",
                row.len(),
                schema.name,
                schema.columns.len()
            )));
        }
        T::from_value(&row[i]).map_err(|found| Error::ColumnValue {
            table: schema.name.clone(),
            column: schema.columns[i].name.clone(),
            found,
            wanted: T::WANTED,
        })
    }

    /// `row` with this table's column names, for [`NamedRow::get`].
    pub fn named(&self, row: Row) -> NamedRow {
        NamedRow {
            table: self.clone(),
            values: row,
        }
    }
}

/// A row with its table, read by column name ([`Table::named`]).
///
/// ```
/// # use strata::{Database, Options, Schema, Type, row, key};
/// # let db = Database::open(Options::default())?;
/// # let t = db.create_table(
/// #     Schema::new("acct").column("id", Type::Int).nullable_column("nick", Type::Text)
/// #         .primary_key(&["id"]),
/// # )?;
/// # db.run(|x| x.insert(&t, row![1i64, strata::Value::Null]))?;
/// let row = t.named(db.run_read_only(|x| x.get(&t, &key![1i64]))?.expect("row 1"));
/// assert_eq!(row.get::<i64>("id")?, 1);
/// assert_eq!(row.get::<Option<String>>("nick")?, None);
/// # Ok::<(), strata::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct NamedRow {
    table: Table,
    values: Row,
}

impl NamedRow {
    /// Column `column` as a `T` (see [`Table::value`]).
    pub fn get<T: FromValue>(&self, column: impl ColumnRef) -> Result<T> {
        self.table.value(&self.values, column)
    }
    /// The values, in column order.
    pub fn values(&self) -> &[Value] {
        &self.values
    }
    /// The values, in column order, without the table.
    pub fn into_values(self) -> Row {
        self.values
    }
}

impl From<f32> for Value {
    fn from(f: f32) -> Value {
        Value::Float(f as f64)
    }
}

macro_rules! into_int_value {
    ($($t:ty),*) => {$(
        impl From<$t> for Value {
            fn from(i: $t) -> Value {
                Value::Int(i64::from(i))
            }
        }
    )*};
}
// (`i64`, `i32` and `u32` are `value.rs`'s.)
into_int_value!(u16, i16, u8, i8);

/// An integer above `i64::MAX` does not fit a column.
impl TryFrom<u64> for Value {
    type Error = Error;
    fn try_from(i: u64) -> Result<Value> {
        i64::try_from(i)
            .map(Value::Int)
            .map_err(|_| Error::Schema(format!("{i} does not fit an integer column (i64)")))
    }
}

/// As for `u64`.
impl TryFrom<usize> for Value {
    type Error = Error;
    fn try_from(i: usize) -> Result<Value> {
        Value::try_from(i as u64)
    }
}
