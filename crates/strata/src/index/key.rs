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

/// The values encoded in `b` (a concatenation of `encode_values_into`
/// outputs), back.
pub fn decode_values(b: &[u8]) -> Vec<Value> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            1 => {
                let mut w = [0u8; 8];
                w.copy_from_slice(&b[i + 1..i + 9]);
                out.push(Value::Int(ordered_to_int(u64::from_be_bytes(w))));
                i += 9;
            }
            _ => {
                let mut s = Vec::new();
                i += 1;
                while i + 1 < b.len() && !(b[i] == 0 && b[i + 1] == 0) {
                    s.push(b[i]);
                    i += if b[i] == 0 { 2 } else { 1 };
                }
                i += 2;
                out.push(Value::Text(String::from_utf8_lossy(&s).into_owned().into()));
            }
        }
    }
    out
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

        /// A prefix of a key's values selects exactly the keys that start
        /// with it: `[enc(p), prefix_end(enc(p)))`, and `skip_values`
        /// finds where the prefix's encoding ends.
        #[test]
        fn prefix_ranges_select_exactly_the_keys_with_that_prefix((ka, kb) in arb_key_pair(), n in 0usize..4) {
            let n = n.min(ka.0.len());
            let prefix = Key(ka.0[..n].to_vec());
            let mut p = Vec::new();
            encode_values_into(&prefix.0, &mut p);
            let EncodedKey::Bytes(eb) = encode(&kb, false) else { unreachable!() };
            let EncodedKey::Bytes(ea) = encode(&ka, false) else { unreachable!() };
            prop_assert_eq!(skip_values(&ea, n), p.len());
            let in_range = *eb >= *p && prefix_end(&p).is_none_or(|e| *eb < *e);
            prop_assert_eq!(in_range, kb.0.starts_with(&prefix.0));
        }

        #[test]
        fn decoding_inverts_encoding((ka, _kb) in arb_key_pair()) {
            let mut b = Vec::new();
            encode_values_into(&ka.0, &mut b);
            prop_assert_eq!(decode_values(&b), ka.0);
        }

        #[test]
        fn int_fast_form_preserves_order(a: i64, b: i64) {
            let (ka, kb) = (Key::from(a), Key::from(b));
            prop_assert_eq!(a.cmp(&b), encode(&ka, true).cmp(&encode(&kb, true)));
            prop_assert_eq!(ordered_to_int(int_to_ordered(a)), a);
        }
    }
}
