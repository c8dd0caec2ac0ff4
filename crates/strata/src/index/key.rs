//! Order-preserving key encoding.
//!
//! A primary key of several columns becomes one byte string whose `memcmp`
//! order equals the order of the value tuples, so one ordered index serves
//! point lookups and range scans on any prefix-compatible range:
//!
//! ```text
//!   Int  i  -> 0x01 | (i as u64 ^ 1<<63) big-endian      (sign flip: -1 < 0)
//!   Text s  -> 0x02 | s with 0x00 escaped as 0x00 0xFF | 0x00 0x00
//! ```
//!
//! A key of a single `Int` column skips the byte string: it is the sign-flipped
//! `u64` itself (same order, 8 bytes, no allocation).

use crate::value::{Key, Value};

/// An encoded key as stored in the primary index.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub enum EncodedKey {
    U64(u64),
    Bytes(Box<[u8]>),
}

/// Sign-flips an i64 so unsigned order equals signed order.
#[inline]
pub fn int_to_ordered(i: i64) -> u64 {
    (i as u64) ^ (1 << 63)
}

/// Inverse of [`int_to_ordered`].
#[cfg(test)]
pub fn ordered_to_int(u: u64) -> i64 {
    (u ^ (1 << 63)) as i64
}

/// Encodes a key; `int_key` selects the single-Int fast form.
pub fn encode(key: &Key, int_key: bool) -> EncodedKey {
    if int_key {
        if let [Value::Int(i)] = key.0.as_slice() {
            return EncodedKey::U64(int_to_ordered(*i));
        }
    }
    let mut out = Vec::with_capacity(key.0.len() * 9);
    for v in &key.0 {
        match v {
            Value::Int(i) => {
                out.push(1);
                out.extend_from_slice(&int_to_ordered(*i).to_be_bytes());
            }
            Value::Text(s) => {
                out.push(2);
                for &b in s.as_bytes() {
                    out.push(b);
                    if b == 0 {
                        out.push(0xFF);
                    }
                }
                out.extend_from_slice(&[0, 0]);
            }
        }
    }
    EncodedKey::Bytes(out.into_boxed_slice())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn arb_value() -> impl Strategy<Value = Value> {
        prop_oneof![
            any::<i64>().prop_map(Value::Int),
            "[a-c\\x00]{0,4}".prop_map(Value::from),
        ]
    }

    proptest! {
        #[test]
        fn encoding_preserves_order(a in proptest::collection::vec(arb_value(), 1..3),
                                    b in proptest::collection::vec(arb_value(), 1..3)) {
            // Only tuples of the same shape are compared by the index.
            prop_assume!(a.len() == b.len() && a.iter().zip(&b).all(|(x, y)| x.ty() == y.ty()));
            let (ka, kb) = (Key(a), Key(b));
            prop_assert_eq!(ka.cmp(&kb), encode(&ka, false).cmp(&encode(&kb, false)));
        }

        #[test]
        fn int_fast_form_preserves_order(a: i64, b: i64) {
            let (ka, kb) = (Key::from(a), Key::from(b));
            prop_assert_eq!(a.cmp(&b), encode(&ka, true).cmp(&encode(&kb, true)));
            prop_assert_eq!(ordered_to_int(int_to_ordered(a)), a);
        }
    }
}
