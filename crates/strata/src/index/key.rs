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
    encode_values_into(&key.0, &mut out);
    EncodedKey::Bytes(out.into_boxed_slice())
}

/// Appends the byte-string encoding of `values` to `out` (each value is
/// self-delimiting, so a concatenation sorts like the tuple of its parts;
/// secondary index entries are `ikey ++ primary key` built this way).
pub fn encode_values_into<'a>(values: impl IntoIterator<Item = &'a Value>, out: &mut Vec<u8>) {
    for v in values {
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
}

/// Length of the first `n` encoded values at the start of `b`.
pub fn skip_values(b: &[u8], n: usize) -> usize {
    let mut i = 0;
    for _ in 0..n {
        match b.get(i) {
            Some(1) => i += 9,
            Some(2) => {
                i += 1;
                // Text ends at 0x00 0x00; 0x00 0xFF is an escaped 0x00.
                while i + 1 < b.len() && !(b[i] == 0 && b[i + 1] == 0) {
                    i += if b[i] == 0 { 2 } else { 1 };
                }
                i += 2;
            }
            _ => return b.len(),
        }
    }
    i.min(b.len())
}

/// The smallest byte string greater than every string that starts with
/// `prefix`, or None if there is none (empty or all 0xFF).
pub fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut p = prefix.to_vec();
    while let Some(&last) = p.last() {
        if last == 0xFF {
            p.pop();
        } else {
            *p.last_mut().expect("non-empty") += 1;
            return Some(p);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Two keys of the same shape (the index only ever compares those).
    fn arb_key_pair() -> impl Strategy<Value = (Key, Key)> {
        proptest::collection::vec(any::<bool>(), 1..4).prop_flat_map(|shape| {
            let one = |shape: &Vec<bool>| {
                shape
                    .iter()
                    .map(|&is_int| {
                        if is_int {
                            any::<i64>().prop_map(Value::Int).boxed()
                        } else {
                            "[a-c\\x00]{0,4}".prop_map(Value::from).boxed()
                        }
                    })
                    .collect::<Vec<_>>()
                    .prop_map(Key)
            };
            (one(&shape), one(&shape))
        })
    }

    proptest! {
        #[test]
        fn encoding_preserves_order((ka, kb) in arb_key_pair()) {
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
