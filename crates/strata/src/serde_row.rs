//! Rows as Rust structs, through serde: [`to_row`] turns a struct (or a
//! tuple) into a [`Row`], field by field in declaration order, and
//! [`from_row`] turns a row back. The schema's column order is the struct's
//! field order; names are not looked at. The mapping of one field:
//!
//! ```text
//!   i8..i64, u8..u32, u64 <= i64::MAX  <->  Int
//!   String, &str, char, unit enum variant <->  Text (the variant's name)
//!   f32, f64                           <->  Float
//!   bool                               <->  Bool
//!   Vec<u8>, [u8; N], serde_bytes      <->  Bytes (any sequence of bytes)
//!   Option<T>: None                    <->  Null, Some(x) as x
//!   a newtype struct                   <->  its field
//! ```
//!
//! Anything else (maps, nested structs, enum variants with data) is an
//! `Error::RowMapping` naming what was refused; so is a row of another
//! length than the struct or a value a field cannot take (`Text` into an
//! `i64`, a negative `Int` into a `u32`, `Null` into a non-`Option`).
//! Column types are checked by the table, as for any row: a struct field of
//! another type than its column is the insert's `Error::TypeMismatch`.

use crate::error::{Error, Result};
use crate::value::{Row, Value};
use serde::de::value::SeqDeserializer;
use serde::de::{self, DeserializeOwned, IntoDeserializer, Visitor};
use serde::ser::{self, Impossible, Serialize};
use std::fmt;

/// The row of `v` (a struct, tuple struct or tuple), in field order.
pub fn to_row<T: Serialize + ?Sized>(v: &T) -> Result<Row> {
    v.serialize(RowSer).map_err(|e| Error::RowMapping(e.0))
}

/// The struct (or tuple) whose fields are `row`'s values, in order.
pub fn from_row<T: DeserializeOwned>(row: &[Value]) -> Result<T> {
    T::deserialize(RowDe(row)).map_err(|e| Error::RowMapping(e.0))
}

/// serde's error type inside the mapping; the caller sees `RowMapping`.
#[derive(Debug)]
struct MapError(String);

impl fmt::Display for MapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for MapError {}
impl ser::Error for MapError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        MapError(msg.to_string())
    }
}
impl de::Error for MapError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        MapError(msg.to_string())
    }
}

fn refuse<T>(what: &str) -> Result<T, MapError> {
    Err(MapError(format!(
        "{what} does not map to a row or a column"
    )))
}

// ---------------------------------------------------------------- to a row

/// Serializes the whole row: only a struct, tuple or sequence of fields.
struct RowSer;

/// The fields collected so far.
struct Fields(Row);

impl Fields {
    fn push<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), MapError> {
        self.0.push(v.serialize(ValueSer)?);
        Ok(())
    }
}

impl ser::SerializeStruct for Fields {
    type Ok = Row;
    type Error = MapError;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        _: &'static str,
        v: &T,
    ) -> Result<(), MapError> {
        self.push(v)
    }
    fn end(self) -> Result<Row, MapError> {
        Ok(self.0)
    }
}
impl ser::SerializeTuple for Fields {
    type Ok = Row;
    type Error = MapError;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), MapError> {
        self.push(v)
    }
    fn end(self) -> Result<Row, MapError> {
        Ok(self.0)
    }
}
impl ser::SerializeTupleStruct for Fields {
    type Ok = Row;
    type Error = MapError;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), MapError> {
        self.push(v)
    }
    fn end(self) -> Result<Row, MapError> {
        Ok(self.0)
    }
}

/// Every `serialize_*` of a row serializer that is not a row: refused.
macro_rules! not_a_row {
    ($($f:ident($($t:ty),*)),* $(,)?) => {$(
        fn $f(self, $(_: $t),*) -> Result<Row, MapError> {
            refuse(concat!("a lone value (", stringify!($f), ")"))
        }
    )*};
}

impl ser::Serializer for RowSer {
    type Ok = Row;
    type Error = MapError;
    type SerializeSeq = Impossible<Row, MapError>;
    type SerializeTuple = Fields;
    type SerializeTupleStruct = Fields;
    type SerializeTupleVariant = Impossible<Row, MapError>;
    type SerializeMap = Impossible<Row, MapError>;
    type SerializeStruct = Fields;
    type SerializeStructVariant = Impossible<Row, MapError>;

    not_a_row!(
        serialize_bool(bool),
        serialize_i8(i8),
        serialize_i16(i16),
        serialize_i32(i32),
        serialize_i64(i64),
        serialize_u8(u8),
        serialize_u16(u16),
        serialize_u32(u32),
        serialize_u64(u64),
        serialize_f32(f32),
        serialize_f64(f64),
        serialize_char(char),
        serialize_str(&str),
        serialize_bytes(&[u8]),
        serialize_none(),
        serialize_unit(),
        serialize_unit_struct(&'static str),
        serialize_unit_variant(&'static str, u32, &'static str),
    );
    fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> Result<Row, MapError> {
        refuse("an Option")
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        v: &T,
    ) -> Result<Row, MapError> {
        v.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<Row, MapError> {
        refuse("an enum")
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, MapError> {
        refuse("a sequence of rows")
    }
    fn serialize_tuple(self, n: usize) -> Result<Fields, MapError> {
        Ok(Fields(Vec::with_capacity(n)))
    }
    fn serialize_tuple_struct(self, _: &'static str, n: usize) -> Result<Fields, MapError> {
        Ok(Fields(Vec::with_capacity(n)))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, MapError> {
        refuse("an enum")
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, MapError> {
        refuse("a map")
    }
    fn serialize_struct(self, _: &'static str, n: usize) -> Result<Fields, MapError> {
        Ok(Fields(Vec::with_capacity(n)))
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, MapError> {
        refuse("an enum")
    }
}

/// Serializes one field into one value.
struct ValueSer;

/// A sequence field: bytes, collected into `Bytes`.
struct ByteSeq(Vec<u8>);

impl ByteSeq {
    fn push<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), MapError> {
        match v.serialize(ValueSer)? {
            Value::Int(i) => match u8::try_from(i) {
                Ok(b) => {
                    self.0.push(b);
                    Ok(())
                }
                Err(_) => Err(MapError(format!(
                    "a sequence maps to Bytes, but it holds {i}"
                ))),
            },
            v => Err(MapError(format!(
                "a sequence maps to Bytes, but it holds {v:?}"
            ))),
        }
    }
}
impl ser::SerializeSeq for ByteSeq {
    type Ok = Value;
    type Error = MapError;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), MapError> {
        self.push(v)
    }
    fn end(self) -> Result<Value, MapError> {
        Ok(Value::from(self.0))
    }
}
impl ser::SerializeTuple for ByteSeq {
    type Ok = Value;
    type Error = MapError;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), MapError> {
        self.push(v)
    }
    fn end(self) -> Result<Value, MapError> {
        Ok(Value::from(self.0))
    }
}

impl ser::Serializer for ValueSer {
    type Ok = Value;
    type Error = MapError;
    type SerializeSeq = ByteSeq;
    type SerializeTuple = ByteSeq;
    type SerializeTupleStruct = Impossible<Value, MapError>;
    type SerializeTupleVariant = Impossible<Value, MapError>;
    type SerializeMap = Impossible<Value, MapError>;
    type SerializeStruct = Impossible<Value, MapError>;
    type SerializeStructVariant = Impossible<Value, MapError>;

    fn serialize_bool(self, v: bool) -> Result<Value, MapError> {
        Ok(Value::Bool(v))
    }
    fn serialize_i8(self, v: i8) -> Result<Value, MapError> {
        Ok(Value::Int(v.into()))
    }
    fn serialize_i16(self, v: i16) -> Result<Value, MapError> {
        Ok(Value::Int(v.into()))
    }
    fn serialize_i32(self, v: i32) -> Result<Value, MapError> {
        Ok(Value::Int(v.into()))
    }
    fn serialize_i64(self, v: i64) -> Result<Value, MapError> {
        Ok(Value::Int(v))
    }
    fn serialize_u8(self, v: u8) -> Result<Value, MapError> {
        Ok(Value::Int(v.into()))
    }
    fn serialize_u16(self, v: u16) -> Result<Value, MapError> {
        Ok(Value::Int(v.into()))
    }
    fn serialize_u32(self, v: u32) -> Result<Value, MapError> {
        Ok(Value::Int(v.into()))
    }
    fn serialize_u64(self, v: u64) -> Result<Value, MapError> {
        i64::try_from(v)
            .map(Value::Int)
            .map_err(|_| MapError(format!("{v} does not fit an Int (i64)")))
    }
    fn serialize_f32(self, v: f32) -> Result<Value, MapError> {
        Ok(Value::Float(v.into()))
    }
    fn serialize_f64(self, v: f64) -> Result<Value, MapError> {
        Ok(Value::Float(v))
    }
    fn serialize_char(self, v: char) -> Result<Value, MapError> {
        Ok(Value::from(v.to_string()))
    }
    fn serialize_str(self, v: &str) -> Result<Value, MapError> {
        Ok(Value::from(v))
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<Value, MapError> {
        Ok(Value::from(v))
    }
    fn serialize_none(self) -> Result<Value, MapError> {
        Ok(Value::Null)
    }
    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> Result<Value, MapError> {
        v.serialize(self)
    }
    fn serialize_unit(self) -> Result<Value, MapError> {
        Ok(Value::Null)
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<Value, MapError> {
        Ok(Value::Null)
    }
    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
    ) -> Result<Value, MapError> {
        Ok(Value::from(variant))
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        v: &T,
    ) -> Result<Value, MapError> {
        v.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<Value, MapError> {
        refuse("an enum variant with data")
    }
    fn serialize_seq(self, n: Option<usize>) -> Result<ByteSeq, MapError> {
        Ok(ByteSeq(Vec::with_capacity(n.unwrap_or(0))))
    }
    fn serialize_tuple(self, n: usize) -> Result<ByteSeq, MapError> {
        Ok(ByteSeq(Vec::with_capacity(n)))
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, MapError> {
        refuse("a nested tuple struct")
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, MapError> {
        refuse("an enum variant with data")
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, MapError> {
        refuse("a map")
    }
    fn serialize_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStruct, MapError> {
        refuse("a nested struct")
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, MapError> {
        refuse("an enum variant with data")
    }
}

// -------------------------------------------------------------- from a row

/// Deserializes a whole row as a sequence of fields.
struct RowDe<'a>(&'a [Value]);

impl<'de> de::Deserializer<'de> for RowDe<'_> {
    type Error = MapError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, MapError> {
        let mut seq = SeqDeserializer::new(self.0.iter().map(ValueDe));
        let v = visitor.visit_seq(&mut seq)?;
        // Refuses values left over (a row longer than the struct).
        seq.end()?;
        Ok(v)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map struct enum identifier ignored_any
    }
}

/// Deserializes one field from one value.
struct ValueDe<'a>(&'a Value);

impl<'de> IntoDeserializer<'de, MapError> for ValueDe<'_> {
    type Deserializer = Self;
    fn into_deserializer(self) -> Self {
        self
    }
}

impl<'de> de::Deserializer<'de> for ValueDe<'_> {
    type Error = MapError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, MapError> {
        match self.0 {
            Value::Null => visitor.visit_none(),
            Value::Int(i) => visitor.visit_i64(*i),
            Value::Text(s) => visitor.visit_str(s),
            // A sequence of bytes, which `Vec<u8>` and `[u8; N]` take
            // (all of them: `end` refuses bytes left over).
            Value::Bytes(b) => {
                let mut seq = SeqDeserializer::new(b.iter().copied());
                let v = visitor.visit_seq(&mut seq)?;
                seq.end()?;
                Ok(v)
            }
            Value::Float(f) => visitor.visit_f64(*f),
            Value::Bool(b) => visitor.visit_bool(*b),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, MapError> {
        match self.0 {
            Value::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, MapError> {
        match self.0 {
            Value::Bytes(b) => visitor.visit_bytes(b),
            _ => self.deserialize_any(visitor),
        }
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, MapError> {
        self.deserialize_bytes(visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        visitor: V,
    ) -> Result<V::Value, MapError> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, MapError> {
        match self.0 {
            // A unit variant by name.
            Value::Text(s) => visitor.visit_enum(s.as_str().into_deserializer()),
            _ => self.deserialize_any(visitor),
        }
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        unit unit_struct seq tuple tuple_struct map struct identifier ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::{Deserialize, Serialize};

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    enum Level {
        Low,
        High,
    }

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Id(u32);

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Every {
        id: Id,
        small: i8,
        big: u64,
        name: String,
        blob: Vec<u8>,
        fixed: [u8; 2],
        ratio: f64,
        half: f32,
        ok: bool,
        level: Level,
        initial: char,
        maybe: Option<i64>,
        missing: Option<String>,
    }

    fn every() -> Every {
        Every {
            id: Id(7),
            small: -3,
            big: u64::MAX / 2,
            name: "ann".into(),
            blob: vec![0, 255],
            fixed: [1, 2],
            ratio: -0.25,
            half: 1.5,
            ok: true,
            level: Level::High,
            initial: 'é',
            maybe: Some(5),
            missing: None,
        }
    }

    #[test]
    fn a_struct_round_trips_field_by_field() {
        let row = to_row(&every()).unwrap();
        assert_eq!(
            row,
            crate::row![
                7,
                -3,
                (u64::MAX / 2) as i64,
                "ann",
                vec![0u8, 255],
                vec![1u8, 2],
                -0.25,
                1.5,
                true,
                "High",
                "é",
                Some(5),
                None::<&str>,
            ]
        );
        assert_eq!(from_row::<Every>(&row).unwrap(), every());
        // Tuples too.
        let t = to_row(&(1, "a", Level::Low)).unwrap();
        assert_eq!(
            from_row::<(i64, String, Level)>(&t).unwrap(),
            (1, "a".into(), Level::Low)
        );
    }

    #[test]
    fn what_does_not_map_is_a_row_mapping_error() {
        let refused = |r: Result<Row>| matches!(r, Err(Error::RowMapping(_)));
        assert!(refused(to_row(&5)));
        assert!(refused(to_row(&Some(1))));
        assert!(refused(to_row(&(1, u64::MAX))));
        assert!(refused(to_row(&(1, vec![300u16]))));
        assert!(refused(to_row(&(1, (2, "x")))));
        assert!(refused(to_row(&(1, every()))));
        assert!(refused(to_row(&(
            1,
            std::collections::BTreeMap::<i64, i64>::new()
        ))));
        let mut row = to_row(&every()).unwrap();
        let bad = |r: &Row| matches!(from_row::<Every>(r), Err(Error::RowMapping(_)));
        row.push(Value::Int(1));
        assert!(bad(&row), "a value too many");
        row.truncate(5);
        assert!(bad(&row), "values too few");
        let mut row = to_row(&every()).unwrap();
        row[3] = Value::Int(1);
        assert!(bad(&row), "Int into a String");
        let mut row = to_row(&every()).unwrap();
        row[0] = Value::Int(-1);
        assert!(bad(&row), "negative into a u32");
        let mut row = to_row(&every()).unwrap();
        row[8] = Value::Null;
        assert!(bad(&row), "Null into a bool");
        let mut row = to_row(&every()).unwrap();
        row[9] = Value::from("Middle");
        assert!(bad(&row), "no such variant");
        let mut row = to_row(&every()).unwrap();
        row[5] = Value::from(vec![1u8, 2, 3]);
        assert!(bad(&row), "three bytes into [u8; 2]");
    }
}
