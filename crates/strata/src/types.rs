//! Column types: a leaf module, so that both the values (`value`) and the
//! typed errors (`error`) can name a [`Type`] without importing each other.

use std::fmt;

/// Column types. Whether a column also admits `NULL` is a property of the
/// column ([`crate::Column::nullable`]), not of its type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Type {
    /// A 64-bit signed integer.
    Int,
    /// A UTF-8 string, stored out of line and shared between versions.
    Text,
    /// A byte string, stored out of line and shared between versions.
    Bytes,
    /// A 64-bit IEEE 754 float. Compared and keyed by a total order:
    /// `-0.0 == 0.0`, and every NaN is equal to every other NaN and greater
    /// than `+inf` (see [`crate::Value`]).
    Float,
    /// `true` or `false` (`false < true`).
    Bool,
}

impl Type {
    /// Every type, in declaration order.
    pub const ALL: [Type; 5] = [Type::Int, Type::Text, Type::Bytes, Type::Float, Type::Bool];

    /// A short stable name (`int`, `text`, `bytes`, `float`, `bool`).
    pub fn name(self) -> &'static str {
        match self {
            Type::Int => "int",
            Type::Text => "text",
            Type::Bytes => "bytes",
            Type::Float => "float",
            Type::Bool => "bool",
        }
    }
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
