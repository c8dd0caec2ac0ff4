//! How Payment and OrderStatus find a customer by last name (spec
//! 2.5.2.2, 2.6.2.2: the customer at position ceil(n/2) of those with the
//! name, sorted by first name).
//!
//! ```text
//!  index (default)  customer_by_last (w, d, last, first) ── scan, in the
//!                   transaction ──> every customer of the name, read through
//!                   the protocol ──> the middle one's id
//!  list             customer_name (w, d, last) -> [c_id ...] in first-name
//!                   order, built at load ── one point read through the
//!                   protocol ──> the middle id
//! ```
//!
//! `Index` is what the engine is for: the secondary index is maintained
//! by the engine, its scan is phantom-protected, and the index-kind
//! figures measure it. `List` is how the peers keep the mapping: CCBench's
//! `tpcc_silo` builds a vector of keys per (w, d, last) at load and reads
//! it outside its transactions (`get_customer_key_by_last_name`); Silo's
//! and ERMIA's TPC-C keep a name-index table of their own. It is valid
//! because TPC-C never adds a customer and never changes a name, so the
//! list loaded is the list forever; here it is still a row read through
//! the protocol, so a Payment stays serializable whatever the mix. With
//! `List` the customer table has no secondary index at all (as in
//! `tpcc_silo`), so its updates and its GC maintain none.
//!
//! Invariant: for every (w, d, last) both answer the same customer id
//! (`tests.rs`: `both_name_lookups_answer_the_same_customer`), as long as
//! no customer is added at run time, which no TPC-C transaction does.

use serde::Serialize;
use strata::{Index, Table, Value};

/// Where Payment and OrderStatus look names up (`Tables::names`).
pub enum Names {
    /// `customer_by_last`: (w, d, last, first), not unique.
    Index(Index),
    /// `customer_name`: (w, d, last) -> `cn_c_ids`, the ids as 2-byte
    /// little-endian integers in first-name order.
    List(Table),
}

impl Names {
    /// The secondary index, if names are looked up through one.
    pub fn index(&self) -> Option<&Index> {
        match self {
            Names::Index(i) => Some(i),
            Names::List(_) => None,
        }
    }
}

/// `customer_name`'s column of ids.
pub(super) const C_IDS: usize = 3;

/// How a customer is found by last name (`TpccConfig::by_name`,
/// `strata bench tpcc --by-name`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ByName {
    /// Scan the secondary index `customer_by_last` in the transaction.
    #[default]
    Index,
    /// Read the load-time list of ids in table `customer_name`.
    List,
}

impl ByName {
    pub const ALL: [ByName; 2] = [ByName::Index, ByName::List];

    pub fn name(self) -> &'static str {
        match self {
            ByName::Index => "index",
            ByName::List => "list",
        }
    }
}

impl std::str::FromStr for ByName {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        ByName::ALL
            .into_iter()
            .find(|b| b.name() == s)
            .ok_or_else(|| format!("expected index or list, got {s:?}"))
    }
}

/// The `c_ids` column of a `customer_name` row: each id as 2 bytes, little
/// endian (a district has at most 3,000 customers).
pub(super) fn encode_ids(ids: impl IntoIterator<Item = i64>) -> Value {
    let bytes: Vec<u8> = ids
        .into_iter()
        .flat_map(|c| u16::try_from(c).expect("c_id in 1..=3000").to_le_bytes())
        .collect();
    Value::Bytes(std::sync::Arc::new(bytes))
}

/// The middle id of an encoded list (position ceil(n/2), counted from 1),
/// or `None` for an empty or malformed one.
pub(super) fn middle_id(ids: &Value) -> Option<i64> {
    let b = ids.as_bytes()?;
    let n = b.len() / 2;
    if n == 0 || b.len() % 2 != 0 {
        return None;
    }
    let i = (n - 1) / 2 * 2;
    Some(i64::from(u16::from_le_bytes([b[i], b[i + 1]])))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_middle_id_is_at_ceil_half() {
        let ids = |v: &[i64]| encode_ids(v.iter().copied());
        assert_eq!(middle_id(&ids(&[7])), Some(7));
        assert_eq!(middle_id(&ids(&[7, 9])), Some(7));
        assert_eq!(middle_id(&ids(&[7, 9, 3000])), Some(9));
        assert_eq!(middle_id(&ids(&[1, 2, 3, 4])), Some(2));
        assert_eq!(middle_id(&ids(&[])), None);
        assert_eq!(middle_id(&Value::Bytes(std::sync::Arc::new(vec![1]))), None);
        assert_eq!(middle_id(&Value::Int(3)), None);
        assert_eq!("list".parse::<ByName>(), Ok(ByName::List));
        assert!("names".parse::<ByName>().is_err());
    }
}
