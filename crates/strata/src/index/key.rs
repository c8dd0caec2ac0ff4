//! Order-preserving key encoding.
//!
//! A primary key of several columns becomes one byte string whose `memcmp`
//! order equals the order of the value tuples, so one ordered index serves
//! point lookups and range scans on any prefix-compatible range:
//!
//! ```text
//!   Null    -> 0x00                                       (nulls sort first)
//!   Int  i  -> 0x01 | (i as u64 ^ 1<<63) big-endian      (sign flip: -1 < 0)
//!   Text s  -> 0x02 | s with 0x00 escaped as 0x00 0xFF | 0x00 0x00
//!   Bytes b -> 0x03 | b with 0x00 escaped as 0x00 0xFF | 0x00 0x00
//!   Float f -> 0x04 | float_to_ordered(f) big-endian      (IEEE total order)
//!   Bool b  -> 0x05 | 0x00 or 0x01
//! ```
//!
//! Each value is self-delimiting: fixed width, or (text, bytes) ended by
//! `0x00 0x00`, which no escaped payload contains, and which sorts below
//! every continuation (`0x00 0xFF`, or any non-zero byte), so `"ab" <
//! "ab\0" < "abc"` holds in bytes as in values. The tag is the value's
//! position in the [`Value`] order, so a `Null` in a nullable secondary
//! index column sorts before every non-null value.
//!
//! Floats are canonicalised before their total-order flip (`-0.0` encodes
//! as `0.0`, every NaN as one NaN above `+inf`), exactly as [`Value`]
//! compares them; so a float key never needs refusing: `0.0` and `-0.0`
//! are the same key, and so are all NaNs.
//!
//! The invariant, checked by the property tests below for every type and for
//! composite keys: `memcmp(encode(a), encode(b)) == a.cmp(b)`.
//!
//! A key of a single `Int` column skips the byte string: it is the sign-flipped
//! `u64` itself (same order, 8 bytes, no allocation).

use crate::value::{float_to_ordered, Key, Value};
use smallvec::SmallVec;

/// An encoded byte key: up to [`INLINE_KEY`] bytes held in place (in the
/// write set, a hash entry), longer ones on the heap.
///
/// A boxed key cost an allocation per copy (encoding, the write set's, the
/// tree's and the hash's: four per insert) and a second cache miss at each
/// comparison of a search, node first, then the key it points to. Every key
/// of TPC-C's tables encodes in at most 36 bytes.
pub type ByteKey = SmallVec<[u8; INLINE_KEY]>;
/// Bytes of a key kept inline; a [`ByteKey`] is then 48 bytes.
pub const INLINE_KEY: usize = 40;
const _: () = assert!(std::mem::size_of::<ByteKey>() == INLINE_KEY + 8);

/// The *order word* of a byte key: what the ordered index
/// (`index::btree`) compares first, so that most comparisons of a
/// search never read the key's bytes.
///
/// A composite key of integers encodes each as 9 bytes (tag, then the
/// sign-flipped `u64`), so keys of one table share long runs: TPC-C's
/// order lines `(w, d, o, ol)` are 36 bytes that differ in bytes 26 and
/// 35 (a `memcmp` at every step of a search was about 15% of TPC-C's
/// instructions in the skip list the tree replaced). The word is the
/// first 16 bytes of a compact re-encoding of the key's leading integers
/// (tag, then a length class and only the significant bytes,
/// FoundationDB's tuple code for integers) and, from the first value of
/// another type, the bytes as they are; those keys fit in it whole:
///
/// ```text
///  bytes  01 80 00 00 00 00 00 00 01 | 01 80 .. 05 | 01 80 .. 0b b9 | 01 80 .. 07
///  word   01 81 01 | 01 81 05 | 01 82 0b b9 | 01 81 07 | 00 00 00
/// ```
///
/// Invariant: the word is monotone in the bytes (`a <= b` implies
/// `word(a) <= word(b)`, for any byte strings, valid encodings or not), so
/// ordering by (word, bytes) is exactly the byte order
/// (`tree_keys_order_as_their_bytes` checks it). In detail: its leading integer groups
/// re-encoded compactly, from another tag on the bytes as they are, cut at
/// 16 bytes, zero-padded. Monotone:
/// two strings agree up to their first differing group, and there
/// - two complete integer groups compare as their integers, and the compact
///   code (length class, then significant bytes; negatives below zero,
///   larger magnitudes lower) orders integers the same way;
/// - another tag orders as the bytes do against an integer's tag or
///   another tag, and after it the word copies the rest as it is (so two
///   strings that get there compare on as their bytes);
/// - an integer group cut short (a string that ends inside it) is coded
///   as the smallest integer its bytes begin with, then the word stops:
///   every complete group below those bytes codes lower, every one that
///   begins with them codes the same or higher;
/// - a string that ends gets zero padding, at or below anything longer.
///
/// Cutting a word at 16 bytes keeps `<=`.
///
/// With the word, whether it holds the key whole: the key is complete
/// integer groups only and their compact codes fit in 16 bytes (every
/// TPC-C key). Such a word decodes to its key alone
/// (`key_of_whole_word`: a group starts with the integer tag, never
/// zero, so the padding ends the decoding), so two keys held whole are
/// equal exactly when their words are.
pub fn order_word_whole(b: &[u8]) -> ([u64; 2], bool) {
    // The word's bytes written in order into a buffer with room to spill
    // past 16 (what spills is cut), `n` bytes used: an integer group goes
    // in as one chunk (tag, class, then its significant bytes), not a byte
    // at a time (238 instructions a TPC-C key byte by byte), and as bytes,
    // not as shifts of a 128-bit word (variable u128 shifts made each
    // group ~65 instructions: about 1,500 of a TPC-C transaction's).
    let mut buf = [0u8; 32];
    let mut n = 0usize;
    let mut whole = b.len().is_multiple_of(9);
    let mut i = 0;
    while let Some(&tag) = b.get(i) {
        if tag != INT {
            whole = false;
            // The rest as it is: strings that agree up to here compare
            // from here as their bytes do (a text key's first bytes). One
            // copy of up to 16 - n bytes (at least one: `n < 16` here),
            // not a byte at a time: a TPC-C last-name scan bound took 428
            // instructions so, 255 then (callgrind; MV-PBT's P_N scans).
            let k = (16 - n).min(b.len() - i);
            buf[n..n + k].copy_from_slice(&b[i..i + k]);
            break;
        }
        let (class, len, x) = compact_int(&b[i + 1..]);
        if n + len + 2 > 16 {
            whole = false;
        }
        // Tag, class, then the low `len` bytes of `x`, big-endian (all
        // eight written: the ones past `len` are zeros, which the next
        // group overwrites or the padding wants; `n < 16` here, so they
        // stay inside the buffer).
        buf[n] = tag;
        buf[n + 1] = class;
        let low = (x as u64).checked_shl(8 * (8 - len as u32)).unwrap_or(0);
        buf[n + 2..n + 10].copy_from_slice(&low.to_be_bytes());
        n += len + 2;
        // (A group cut short ends the string: `i` passes its end.)
        if n >= 16 {
            // A full word with groups left over does not hold them.
            whole &= i + 9 >= b.len();
            break;
        }
        i += 9;
    }
    let word = |at: usize| u64::from_be_bytes(buf[at..at + 8].try_into().expect("8 bytes"));
    ([word(0), word(8)], whole)
}

/// The order word alone (tests).
#[cfg(test)]
pub fn order_word(b: &[u8]) -> [u64; 2] {
    order_word_whole(b).0
}

/// The compact code of the integer group whose bytes after the tag begin
/// `rest` (a group cut short reads as zero-padded): its length class, the
/// number of significant bytes, and the integer.
#[inline(always)]
fn compact_int(rest: &[u8]) -> (u8, usize, i64) {
    // A whole group is one load (a copy of a variable length was a
    // `memcpy` call a group: about a third of a TPC-C key's word).
    let u = match rest.first_chunk::<8>() {
        Some(c) => u64::from_be_bytes(*c),
        None => {
            let mut u = [0u8; 8];
            u[..rest.len()].copy_from_slice(rest);
            u64::from_be_bytes(u)
        }
    };
    let x = ordered_to_int(u);
    // The magnitude's significant bytes: of `x`, or of `!x` below zero.
    let m = (x ^ (x >> 63)) as u64;
    let len = (64 - m.leading_zeros()).div_ceil(8);
    let class = if x >= 0 {
        0x80 + len as u8
    } else {
        0x7F - len as u8
    };
    (class, len as usize, x)
}

/// The key a word that holds its key whole stands for
/// ([`order_word_whole`]): integer groups until the padding.
pub fn key_of_whole_word(w: [u64; 2]) -> ByteKey {
    let bytes = ((u128::from(w[0]) << 64) | u128::from(w[1])).to_be_bytes();
    let mut out = ByteKey::new();
    let mut i = 0;
    while i + 1 < 16 && bytes[i] == INT {
        let class = bytes[i + 1];
        let (len, negative) = if class >= 0x80 {
            ((class - 0x80) as usize, false)
        } else {
            ((0x7F - class) as usize, true)
        };
        let mut x: u64 = if negative { u64::MAX } else { 0 };
        for &byte in bytes.iter().skip(i + 2).take(len) {
            x = (x << 8) | u64::from(byte);
        }
        out.push(INT);
        out.extend_from_slice(&int_to_ordered(x as i64).to_be_bytes());
        i += 2 + len;
    }
    out
}

/// An encoded key as stored in the primary index.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub enum EncodedKey {
    U64(u64),
    Bytes(ByteKey),
}

/// Where an encoding is written: a `Vec` (secondary entries) or a
/// [`ByteKey`] (primary keys).
pub trait KeyBuf {
    fn push(&mut self, b: u8);
    fn extend_from_slice(&mut self, b: &[u8]);
}

impl KeyBuf for Vec<u8> {
    #[inline]
    fn push(&mut self, b: u8) {
        Vec::push(self, b)
    }
    #[inline]
    fn extend_from_slice(&mut self, b: &[u8]) {
        Vec::extend_from_slice(self, b)
    }
}

impl KeyBuf for ByteKey {
    #[inline]
    fn push(&mut self, b: u8) {
        SmallVec::push(self, b)
    }
    #[inline]
    fn extend_from_slice(&mut self, b: &[u8]) {
        SmallVec::extend_from_slice(self, b)
    }
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

/// Encodes a key; `int_key` selects the single-Int fast form (inline:
/// every point read and write encodes its key).
#[inline]
pub fn encode(key: &Key, int_key: bool) -> EncodedKey {
    if int_key {
        if let [Value::Int(i)] = key.0.as_slice() {
            return EncodedKey::U64(int_to_ordered(*i));
        }
    }
    encode_bytes(key)
}

/// [`encode`] of the key `cols` pick out of `row`, without building the
/// key (an insert's: the `Key` it built was a vector allocated and freed
/// per insert). `None` where `encode` takes its general path (a key not
/// of integers alone, or longer than the inline buffer): the caller then
/// encodes a built key.
#[inline]
pub fn encode_cols(row: &[Value], cols: &[usize], int_key: bool) -> Option<EncodedKey> {
    if int_key {
        if let [c] = cols {
            if let Value::Int(i) = row[*c] {
                return Some(EncodedKey::U64(int_to_ordered(i)));
            }
        }
    }
    if cols.len() * 9 > INLINE_KEY {
        return None;
    }
    let mut buf = [0u8; INLINE_KEY];
    let mut len = 0;
    for &c in cols {
        let Value::Int(i) = row[c] else {
            return None;
        };
        buf[len] = INT;
        buf[len + 1..len + 9].copy_from_slice(&int_to_ordered(i).to_be_bytes());
        len += 9;
    }
    Some(EncodedKey::Bytes(ByteKey::from_buf_and_len(buf, len)))
}

#[inline(never)]
fn encode_bytes(key: &Key) -> EncodedKey {
    // Composite integer keys (TPC-C's, all of them) are written straight
    // into the inline buffer: `SmallVec`'s growth checks per value cost
    // more than the encoding.
    if key.0.len() * 9 <= INLINE_KEY {
        let mut buf = [0u8; INLINE_KEY];
        let mut len = 0;
        for v in &key.0 {
            let Value::Int(i) = v else {
                return encode_general(key);
            };
            buf[len] = INT;
            buf[len + 1..len + 9].copy_from_slice(&int_to_ordered(*i).to_be_bytes());
            len += 9;
        }
        return EncodedKey::Bytes(ByteKey::from_buf_and_len(buf, len));
    }
    encode_general(key)
}

/// A 64-bit code of an encoded key made of up to seven non-negative
/// integers that are small enough together, or `None`: the hash side of a
/// byte-keyed primary index keeps such keys in an [`super::hash`] table
/// (16-byte entries, one line a lookup, chain-head hints) instead of a
/// hash map of 48-byte keys. Every TPC-C key packs.
///
/// ```text
///  (2, 7, 70000, 12) ──> [n=4 : 3 bits] [len 2 : 6] 10 [len 3 : 6] 111
///                        [len 17 : 6] 10001000101110000 [len 4 : 6] 1100 0…0
/// ```
///
/// Left-aligned and read from the top, the fields decode in one way only,
/// so two keys with one code are one key. The code says nothing about
/// order (the tree keeps that); its top three bits are n >= 1, so it is
/// never 0.
pub fn packed_ints(b: &[u8]) -> Option<u64> {
    let n = b.len() / 9;
    if !b.len().is_multiple_of(9) || !(1..=7).contains(&n) {
        return None;
    }
    let (mut code, mut used) = (n as u64, 3u32);
    for g in b.chunks_exact(9) {
        if g[0] != INT {
            return None;
        }
        let i = ordered_to_int(u64::from_be_bytes(
            g[1..9].try_into().expect("9-byte group"),
        ));
        if i < 0 {
            return None;
        }
        let len = 64 - (i as u64).leading_zeros();
        if used + 6 + len > 64 {
            return None;
        }
        code = (code << 6 | u64::from(len)) << len | i as u64;
        used += 6 + len;
    }
    Some(code << (64 - used))
}

fn encode_general(key: &Key) -> EncodedKey {
    EncodedKey::Bytes(encode_byte_key(&key.0))
}

/// `values` as [`encode_values_into`] writes them, in a [`ByteKey`].
pub fn encode_byte_key(values: &[Value]) -> ByteKey {
    // A key that fits inline (a TPC-C name key: two integers and a last
    // name) is written into a plain array: `SmallVec`'s room and spill
    // checks on each of its seven pieces cost about 530 instructions an
    // encoding, most of a by-name point read's key (callgrind), and as
    // much again for a by-name scan's bounds.
    if encoded_len(values) <= INLINE_KEY {
        let mut w = Fixed {
            buf: [0; INLINE_KEY],
            len: 0,
        };
        encode_values_into(values, &mut w);
        // (Escapes may still have made it too long: then `len` is past
        // the room, and the general path below writes it.)
        if w.len <= INLINE_KEY {
            return ByteKey::from_buf_and_len(w.buf, w.len);
        }
    }
    let mut out = ByteKey::new();
    encode_values_into(values, &mut out);
    out
}

/// A key buffer of [`INLINE_KEY`] bytes that counts past its room
/// without writing there: `len > INLINE_KEY` says the key did not fit.
struct Fixed {
    buf: [u8; INLINE_KEY],
    len: usize,
}

impl KeyBuf for Fixed {
    #[inline]
    fn push(&mut self, b: u8) {
        if let Some(x) = self.buf.get_mut(self.len) {
            *x = b;
        }
        self.len += 1;
    }
    #[inline]
    fn extend_from_slice(&mut self, b: &[u8]) {
        if let Some(x) = self.buf.get_mut(self.len..self.len + b.len()) {
            x.copy_from_slice(b);
        }
        self.len += b.len();
    }
}

/// The length of [`encode_values_into`]'s output for `values`, but for
/// escapes (a zero byte in a text takes two): the capacity to give a
/// buffer before encoding into it, so that it is allocated once. (A
/// by-name scan's two bounds grew an empty vector three times each.)
pub fn encoded_len<'a>(values: impl IntoIterator<Item = &'a Value>) -> usize {
    values
        .into_iter()
        .map(|v| match v {
            Value::Null => 1,
            Value::Bool(_) => 2,
            Value::Int(_) | Value::Float(_) => 9,
            Value::Text(s) => s.len() + 3,
            Value::Bytes(b) => b.len() + 3,
        })
        .sum()
}

/// Appends the byte-string encoding of `values` to `out` (each value is
/// self-delimiting, so a concatenation sorts like the tuple of its parts;
/// secondary index entries are `ikey ++ primary key` built this way).
pub fn encode_values_into<'a>(values: impl IntoIterator<Item = &'a Value>, out: &mut impl KeyBuf) {
    for v in values {
        match v {
            Value::Null => out.push(NULL),
            Value::Int(i) => {
                out.push(INT);
                out.extend_from_slice(&int_to_ordered(*i).to_be_bytes());
            }
            Value::Text(s) => {
                out.push(TEXT);
                escaped_into(s.as_bytes(), out);
            }
            Value::Bytes(b) => {
                out.push(BYTES);
                escaped_into(b, out);
            }
            Value::Float(f) => {
                out.push(FLOAT);
                out.extend_from_slice(&float_to_ordered(*f).to_be_bytes());
            }
            Value::Bool(b) => {
                out.push(BOOL);
                out.push(u8::from(*b));
            }
        }
    }
}

/// The length of the encoding of `values` if `enc` starts with it, else
/// None: [`encode_values_into`] compared instead of written. A scan checks
/// every entry it meets against its row (is the entry stale?); comparing
/// in place saves writing and escaping the row's key first (Payment's
/// by-name lookup spent 9% of TPC-C's worker time there).
pub fn match_values<'a>(values: impl IntoIterator<Item = &'a Value>, enc: &[u8]) -> Option<usize> {
    let mut i = 0;
    for v in values {
        let tag = *enc.get(i)?;
        i += 1;
        let (want, word): (u8, Option<u64>) = match v {
            Value::Null => (NULL, None),
            Value::Int(x) => (INT, Some(int_to_ordered(*x))),
            Value::Float(f) => (FLOAT, Some(float_to_ordered(*f))),
            Value::Bool(b) => {
                if tag != BOOL || *enc.get(i)? != u8::from(*b) {
                    return None;
                }
                i += 1;
                continue;
            }
            Value::Text(s) if tag == TEXT => {
                i = match_escaped(s.as_bytes(), enc, i)?;
                continue;
            }
            Value::Bytes(b) if tag == BYTES => {
                i = match_escaped(b, enc, i)?;
                continue;
            }
            Value::Text(_) | Value::Bytes(_) => return None,
        };
        if tag != want {
            return None;
        }
        if let Some(w) = word {
            // A word compare, not a slice compare (a `memcmp` call each).
            let got: [u8; 8] = enc.get(i..i + 8)?.try_into().ok()?;
            if u64::from_be_bytes(got) != w {
                return None;
            }
            i += 8;
        }
    }
    Some(i)
}

/// [`escaped_into`] compared with `enc` from `i`: where the match ends.
fn match_escaped(payload: &[u8], enc: &[u8], mut i: usize) -> Option<usize> {
    // Without a zero byte (names, most text) the escaped form is the
    // payload and the terminator: compared word by word, looking for a
    // zero byte on the way (a `memchr` then a `memcmp` call cost a TPC-C
    // by-name scan about 130 instructions a name; `verbatim_eq`).
    let end = i + payload.len();
    if let Some(got) = enc.get(i..end) {
        if let Some(equal) = verbatim_eq(payload, got) {
            return (equal && enc.get(end..end + 2)? == [0, 0]).then_some(end + 2);
        }
    }
    let mut expect = |bytes: &[u8]| {
        let end = i + bytes.len();
        (enc.get(i..end)? == bytes).then(|| i = end)
    };
    let mut runs = payload.split(|&b| b == 0);
    if let Some(first) = runs.next() {
        expect(first)?;
    }
    for run in runs {
        expect(&[0, 0xFF])?;
        expect(run)?;
    }
    expect(&[0, 0])?;
    Some(i)
}

/// Whether `payload` equals `got` (as long), if `payload` has no zero
/// byte; None once one shows (then its escaped form is longer than it).
/// Eight bytes at a time: a word has a zero byte exactly when
/// `(x - 0x01..01) & !x & 0x80..80` is not zero. The first word that
/// differs answers `Some(false)`: any zero byte before it would have
/// answered None, so the escaped form holds the payload verbatim there.
#[inline]
fn verbatim_eq(payload: &[u8], got: &[u8]) -> Option<bool> {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
    let n = payload.len();
    let got = &got[..n];
    let word = |b: &[u8], k: usize| u64::from_ne_bytes(b[k..k + 8].try_into().expect("8 bytes"));
    let mut k = 0;
    while k + 8 <= n {
        let x = word(payload, k);
        if x.wrapping_sub(ONES) & !x & HIGHS != 0 {
            return None;
        }
        if x != word(got, k) {
            return Some(false);
        }
        k += 8;
    }
    while k < n {
        let x = payload[k];
        if x == 0 {
            return None;
        }
        if x != got[k] {
            return Some(false);
        }
        k += 1;
    }
    Some(true)
}

// Tags: a value's rank in the `Value` order.
const NULL: u8 = 0;
const INT: u8 = 1;
const TEXT: u8 = 2;
const BYTES: u8 = 3;
const FLOAT: u8 = 4;
const BOOL: u8 = 5;

/// A variable-length payload: `0x00` escaped as `0x00 0xFF`, then the
/// terminator `0x00 0x00`.
fn escaped_into(payload: &[u8], out: &mut impl KeyBuf) {
    // A run between zero bytes at a time: a push per byte checks the
    // buffer's room per byte (4% of TPC-C, whose Payment encodes customers'
    // names to check index entries).
    let mut runs = payload.split(|&b| b == 0);
    if let Some(first) = runs.next() {
        out.extend_from_slice(first);
    }
    for run in runs {
        out.extend_from_slice(&[0, 0xFF]);
        out.extend_from_slice(run);
    }
    out.extend_from_slice(&[0, 0]);
}

/// Inverse of `float_to_ordered` (for the canonical value: `-0.0` reads
/// back as `0.0`, every NaN as one NaN, as the key compares them).
fn ordered_to_float(u: u64) -> f64 {
    f64::from_bits(if u >> 63 == 1 { u & !(1 << 63) } else { !u })
}

/// The values encoded in `b` (a concatenation of `encode_values_into`
/// outputs), back: what a covering index scan returns (MV-PBT's
/// `index_scan_keys`). Floats come back canonical (see the module doc).
pub fn decode_values(b: &[u8]) -> Vec<Value> {
    let mut out = Vec::new();
    let mut i = 0;
    let word = |i: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&b[i + 1..i + 9]);
        u64::from_be_bytes(w)
    };
    while i < b.len() {
        match b[i] {
            NULL => {
                out.push(Value::Null);
                i += 1;
            }
            INT => {
                out.push(Value::Int(ordered_to_int(word(i))));
                i += 9;
            }
            FLOAT => {
                out.push(Value::Float(ordered_to_float(word(i))));
                i += 9;
            }
            BOOL => {
                out.push(Value::Bool(b[i + 1] != 0));
                i += 2;
            }
            tag => {
                debug_assert!(tag == TEXT || tag == BYTES, "a key tag");
                let mut payload = Vec::new();
                i += 1;
                while i + 1 < b.len() && !(b[i] == 0 && b[i + 1] == 0) {
                    payload.push(b[i]);
                    i += if b[i] == 0 { 2 } else { 1 };
                }
                i += 2;
                out.push(if tag == BYTES {
                    Value::from(payload)
                } else {
                    Value::from(String::from_utf8_lossy(&payload).into_owned())
                });
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
            Some(&NULL) => i += 1,
            Some(&INT | &FLOAT) => i += 9,
            Some(&BOOL) => i += 2,
            Some(&TEXT | &BYTES) => {
                i += 1;
                // Ends at 0x00 0x00; 0x00 0xFF is an escaped 0x00.
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

/// Whether one of the first `n` encoded values at the start of `b` is a
/// `Null` (a unique index does not compare keys that hold one).
pub fn any_null(b: &[u8], n: usize) -> bool {
    let mut i = 0;
    for _ in 0..n {
        match b.get(i) {
            Some(&NULL) => return true,
            Some(_) => i += skip_values(&b[i..], 1),
            None => return false,
        }
    }
    false
}

/// The smallest byte string greater than every string that starts with
/// `prefix`, or None if there is none (empty or all 0xFF).
pub fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut p = prefix.to_vec();
    let n = bump_prefix(&mut p)?;
    p.truncate(n);
    Some(p)
}

/// [`prefix_end`] in place: increments the last byte of `p` below 0xFF and
/// returns the length up to it (what follows is to be cut), or `None`
/// when every byte is 0xFF.
pub fn bump_prefix(p: &mut [u8]) -> Option<usize> {
    let n = p.iter().rposition(|&b| b != 0xFF)?;
    p[n] += 1;
    Some(n + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::Type;
    use proptest::prelude::*;
    use std::cmp::Ordering;

    /// The end of a prefix: its last byte below 0xFF incremented, the
    /// 0xFF bytes after it cut; none when every byte is 0xFF.
    #[test]
    fn a_prefix_ends_at_its_last_byte_below_ff_incremented() {
        let end = |p: &[u8]| prefix_end(p);
        assert_eq!(end(&[1, 2, 3]), Some(vec![1, 2, 4]));
        assert_eq!(end(&[1, 2, 0xFF, 0xFF]), Some(vec![1, 3]));
        assert_eq!(end(&[0xFF, 0]), Some(vec![0xFF, 1]));
        assert_eq!(end(&[0xFF, 0xFF]), None);
        assert_eq!(end(&[]), None);
        let mut p = [7, 0xFF];
        assert_eq!(bump_prefix(&mut p), Some(1));
        assert_eq!(p[0], 8);
    }

    /// `encoded_len` is the encoding's length, but one less per zero byte
    /// of a text or byte string (its escape), for every kind of value.
    #[test]
    fn encoded_len_is_the_encodings_length_but_for_escapes() {
        let vals = vec![
            Value::Null,
            Value::Bool(true),
            Value::Int(-7),
            Value::Float(2.5),
            Value::from("BARPRIOUGHT"),
            Value::from(""),
            Value::Bytes(vec![1, 2, 3].into()),
        ];
        let mut out = Vec::new();
        encode_values_into(&vals, &mut out);
        assert_eq!(encoded_len(&vals), out.len());
        let zeros = [Value::from("a\0b\0"), Value::Bytes(vec![0].into())];
        let mut out = Vec::new();
        encode_values_into(&zeros, &mut out);
        assert_eq!(encoded_len(&zeros) + 3, out.len());
    }

    /// An insert's key encoded from its row's columns is the key built
    /// and encoded: integer keys of every length and both index kinds,
    /// and `None` (the general path) for anything else.
    #[test]
    fn a_key_encoded_from_its_columns_is_the_built_key_encoded() {
        let row = vec![
            Value::Int(-3),
            Value::from("x"),
            Value::Int(70_000),
            Value::Int(i64::MIN),
            Value::Int(12),
        ];
        for cols in [&[0][..], &[2], &[0, 2], &[2, 3, 4], &[4, 0, 2, 3]] {
            let key = Key(cols.iter().map(|&c| row[c].clone()).collect());
            for int_key in [false, true] {
                assert_eq!(
                    encode_cols(&row, cols, int_key),
                    Some(encode(&key, int_key)),
                    "{cols:?} {int_key}"
                );
            }
        }
        assert_eq!(encode_cols(&row, &[0, 1], false), None);
        assert_eq!(encode_cols(&row, &[1], true), None);
        let long: Vec<usize> = vec![0; INLINE_KEY / 9 + 1];
        assert_eq!(encode_cols(&row, &long, false), None);
    }

    /// A general key is the same bytes whether it fits the fixed buffer or
    /// not: below, at and past [`INLINE_KEY`], also where only escapes
    /// push it past (`encoded_len` said it fits, the zeros made it longer).
    #[test]
    fn a_general_key_encodes_alike_inline_or_spilled() {
        for n in 0..=INLINE_KEY {
            for zeros in [0, 1, 3] {
                let text: String = "a".repeat(n) + &"\0".repeat(zeros);
                let key = Key(vec![Value::Int(7), Value::from(text.as_str())]);
                let mut want = Vec::new();
                encode_values_into(&key.0, &mut want);
                let EncodedKey::Bytes(got) = encode_general(&key) else {
                    panic!("a general key is bytes");
                };
                assert_eq!(got.as_slice(), want.as_slice(), "{n} + {zeros} zeros");
                assert_eq!(got.spilled(), want.len() > INLINE_KEY, "{n} + {zeros}");
            }
        }
    }

    /// A value of column type `ty` (nullable: sometimes `Null`), from small
    /// domains so that ties and shared prefixes are common.
    fn arb_value(ty: Type, nullable: bool) -> BoxedStrategy<Value> {
        let v = match ty {
            Type::Int => prop_oneof![any::<i64>(), -2i64..2]
                .prop_map(Value::Int)
                .boxed(),
            Type::Text => "[a-c\\x00]{0,4}".prop_map(Value::from).boxed(),
            Type::Bytes => proptest::collection::vec(
                prop_oneof![Just(0u8), Just(1), Just(0xFE), Just(0xFF)],
                0..4,
            )
            .prop_map(Value::from)
            .boxed(),
            Type::Float => prop_oneof![
                any::<f64>(),
                Just(0.0),
                Just(-0.0),
                Just(f64::NAN),
                Just(-f64::NAN),
                Just(f64::INFINITY),
                Just(f64::NEG_INFINITY),
                Just(f64::MIN_POSITIVE),
                Just(-1.5),
                Just(1.5),
            ]
            .prop_map(Value::Float)
            .boxed(),
            Type::Bool => any::<bool>().prop_map(Value::Bool).boxed(),
        };
        if nullable {
            prop_oneof![1 => Just(Value::Null), 4 => v].boxed()
        } else {
            v
        }
    }

    /// Two keys of the same shape (the index only ever compares those): a
    /// column type and nullability per position.
    fn arb_key_pair() -> impl Strategy<Value = (Key, Key)> {
        let column = (proptest::sample::select(Type::ALL.to_vec()), any::<bool>());
        proptest::collection::vec(column, 1..4).prop_flat_map(|shape| {
            let one = |shape: &Vec<(Type, bool)>| {
                shape
                    .iter()
                    .map(|&(ty, nullable)| arb_value(ty, nullable))
                    .collect::<Vec<_>>()
                    .prop_map(Key)
            };
            (one(&shape), one(&shape))
        })
    }

    /// The order word a byte at a time: what `order_word` computes a
    /// group at a time (`order_words_are_the_bytewise_ones`).
    fn order_word_bytewise(b: &[u8]) -> [u64; 2] {
        fn put(w: &mut [u8; 16], n: &mut usize, x: u8) {
            if let Some(slot) = w.get_mut(*n) {
                *slot = x;
                *n += 1;
            }
        }
        let (mut w, mut n) = ([0u8; 16], 0);
        let mut i = 0;
        while let Some(&tag) = b.get(i) {
            put(&mut w, &mut n, tag);
            if tag != INT {
                // The rest as it is: strings that agree up to here compare
                // from here as their bytes do (a text key's first bytes).
                for &x in &b[i + 1..] {
                    if n >= w.len() {
                        break;
                    }
                    put(&mut w, &mut n, x);
                }
                break;
            }
            let (class, len, x) = compact_int(&b[i + 1..]);
            put(&mut w, &mut n, class);
            for j in (0..len).rev() {
                put(&mut w, &mut n, (x >> (8 * j)) as u8);
            }
            // (A group cut short ends the string: `i` passes its end.)
            if n >= w.len() {
                break;
            }
            i += 9;
        }
        let hi = u64::from_be_bytes(w[..8].try_into().expect("8 bytes"));
        let lo = u64::from_be_bytes(w[8..].try_into().expect("8 bytes"));
        [hi, lo]
    }

    /// Byte strings for the order word's check: encoded keys of up to
    /// three integers from a small neighbourhood (so they share prefixes
    /// and cross byte and sign boundaries), a text or null among them,
    /// cut short anywhere, or raw bytes.
    fn arb_tree_bytes() -> impl Strategy<Value = Vec<u8>> {
        let int = prop_oneof![
            -300i64..300,
            Just(i64::MIN),
            Just(i64::MAX),
            Just(-1),
            Just(255),
            Just(256),
            Just(65535),
            Just(65536),
            any::<i64>(),
        ]
        .prop_map(Value::Int);
        let value = prop_oneof![
            8 => int,
            1 => "[a-b]{0,2}".prop_map(Value::from),
            1 => Just(Value::Null),
        ];
        let encoded = (
            proptest::collection::vec(value, 0..4),
            any::<prop::sample::Index>(),
        )
            .prop_map(|(vals, cut)| {
                let b = bytes_of(&Key(vals));
                let n = if cut.index(4) == 0 {
                    cut.index(b.len() + 1)
                } else {
                    b.len()
                };
                b[..n].to_vec()
            });
        prop_oneof![
            9 => encoded,
            1 => proptest::collection::vec(any::<u8>(), 0..20),
        ]
    }

    fn bytes_of(k: &Key) -> Vec<u8> {
        let mut out = Vec::new();
        encode_values_into(&k.0, &mut out);
        out
    }

    #[test]
    fn each_type_encodes_in_value_order() {
        // Ascending; equal neighbours are marked by `true`.
        let f = Value::Float;
        let b = |x: &[u8]| Value::from(x);
        let ladder: &[(Value, bool)] = &[
            (Value::Null, false),
            (f(f64::NEG_INFINITY), false),
            (f(-1.0), false),
            (f(-f64::MIN_POSITIVE), false),
            (f(-0.0), false),
            (f(0.0), true),
            (f(f64::from_bits(1)), false),
            (f(1.0), false),
            (f(f64::INFINITY), false),
            (f(f64::NAN), false),
            (f(-f64::NAN), true),
        ];
        let bytes: &[(Value, bool)] = &[
            (Value::Null, false),
            (b(b""), false),
            (b(b"\0"), false),
            (b(b"\0\0"), false),
            (b(b"\0\xff"), false),
            (b(b"ab"), false),
            (b(b"ab\0"), false),
            (b(b"ab\x01"), false),
            (b(b"abc"), false),
            (b(b"\xff"), false),
        ];
        let bools: &[(Value, bool)] = &[
            (Value::Null, false),
            (Value::Bool(false), false),
            (Value::Bool(true), false),
        ];
        for l in [ladder, bytes, bools] {
            for w in l.windows(2) {
                let ((a, _), (c, tie)) = (&w[0], &w[1]);
                let want = if *tie {
                    Ordering::Equal
                } else {
                    Ordering::Less
                };
                assert_eq!(a.cmp(c), want, "{a:?} vs {c:?}");
                let (ka, kc) = (Key(vec![a.clone()]), Key(vec![c.clone()]));
                assert_eq!(bytes_of(&ka).cmp(&bytes_of(&kc)), want, "{a:?} vs {c:?}");
            }
        }
    }

    proptest! {

        /// `match_escaped` (the word-at-a-time path for payloads without a
        /// zero byte, and the run-by-run one for the others) answers what
        /// escaping the payload and comparing bytes would: where the match
        /// ends, from any offset, iff the encoding holds its escaped form
        /// there. Payloads up to 24 bytes (three words and a tail) of a few
        /// byte values, zero and the escape's 0xFF among them, so that near
        /// misses are common.
        #[test]
        fn matching_an_escaped_payload_agrees_with_escaping_it(
            payload in proptest::collection::vec(
                prop_oneof![Just(0u8), Just(1), Just(b'a'), Just(0xFF)], 0..24),
            other in proptest::collection::vec(
                prop_oneof![Just(0u8), Just(1), Just(b'a'), Just(0xFF)], 0..24),
            same in any::<bool>(),
            lead in proptest::collection::vec(any::<u8>(), 0..3),
            tail in proptest::collection::vec(any::<u8>(), 0..3),
        ) {
            let mut mine = Vec::new();
            escaped_into(&payload, &mut mine);
            let mut enc = lead.clone();
            escaped_into(if same { &payload } else { &other }, &mut enc);
            enc.extend_from_slice(&tail);
            let i = lead.len();
            for cut in i..=enc.len() {
                let want = enc[i..cut].starts_with(&mine).then_some(i + mine.len());
                prop_assert_eq!(match_escaped(&payload, &enc[..cut], i), want);
            }
        }

        /// What a covering scan reads back from an entry is the key that
        /// was written (equal as keys compare: floats come back canonical).
        #[test]
        fn decoding_returns_the_encoded_values((ka, _) in arb_key_pair()) {
            let back = decode_values(&bytes_of(&ka));
            prop_assert_eq!(Key(back), ka);
        }
        #[test]
        fn order_words_are_the_bytewise_ones(a in arb_tree_bytes()) {
            prop_assert_eq!(order_word(&a), order_word_bytewise(&a), "{:?}", a);
        }

        /// A word said to hold its key whole decodes to that key, and the
        /// keys said so are the integer-only ones that fit.
        #[test]
        fn whole_words_decode_to_their_keys(a in arb_tree_bytes()) {
            let (w, whole) = order_word_whole(&a);
            if whole {
                prop_assert_eq!(&key_of_whole_word(w)[..], &a[..]);
            }
            let ints_only = a.len() % 9 == 0 && a.chunks(9).all(|g| g[0] == INT);
            prop_assert!(!whole || ints_only);
        }

        /// Tree keys order exactly as their bytes: valid encodings of
        /// integer tuples (near each other: shared prefixes, neighbouring
        /// values, negatives), the same cut short anywhere, other types'
        /// encodings, and raw bytes.
        #[test]
        fn tree_keys_order_as_their_bytes(
            a in arb_tree_bytes(),
            b in arb_tree_bytes(),
        ) {
            let (ka, kb) = ((order_word(&a), &a), (order_word(&b), &b));
            prop_assert_eq!(ka.cmp(&kb), a.cmp(&b), "{:?} vs {:?}", a, b);
        }

        /// Matching values against an encoding answers exactly what
        /// encoding them and comparing bytes would: a match (and its
        /// length) iff the encoding starts with theirs; keys of the same
        /// shape share long prefixes, so near misses are common.
        #[test]
        fn matching_values_agrees_with_encoding_them(
            (ka, kb) in arb_key_pair(),
            n in 0usize..4,
            tail in proptest::collection::vec(any::<u8>(), 0..3),
        ) {
            let n = n.min(ka.0.len());
            let mine = bytes_of(&Key(ka.0[..n].to_vec()));
            prop_assert_eq!(match_values(&ka.0[..n], &bytes_of(&ka)), Some(mine.len()));
            let mut theirs = bytes_of(&kb);
            theirs.extend_from_slice(&tail);
            let want = theirs.starts_with(&mine).then_some(mine.len());
            prop_assert_eq!(match_values(&ka.0[..n], &theirs), want);
            // Cut short anywhere: never a match past the end.
            for cut in 0..theirs.len() {
                let want = theirs[..cut].starts_with(&mine).then_some(mine.len());
                prop_assert_eq!(match_values(&ka.0[..n], &theirs[..cut]), want);
            }
        }

        #[test]
        fn encoding_preserves_order((ka, kb) in arb_key_pair()) {
            prop_assert_eq!(ka.cmp(&kb), encode(&ka, false).cmp(&encode(&kb, false)));
            prop_assert_eq!(ka == kb, ka.cmp(&kb) == Ordering::Equal);
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

        /// The float order is the numeric one wherever that is defined (the
        /// encoding test above would not see a float order that is wrong
        /// in `Value` and the encoding alike).
        #[test]
        fn float_order_is_numeric_order(a in any::<f64>(), b in any::<f64>()) {
            prop_assume!(!a.is_nan() && !b.is_nan());
            let want = a.partial_cmp(&b).unwrap();
            prop_assert_eq!(Value::Float(a).cmp(&Value::Float(b)), want);
            let (ka, kb) = (Key(vec![Value::Float(a)]), Key(vec![Value::Float(b)]));
            prop_assert_eq!(bytes_of(&ka).cmp(&bytes_of(&kb)), want);
        }

        /// `Eq` and `Hash` agree with `Ord` (the hash side of the primary
        /// index and `HashMap`s of keys rely on it).
        #[test]
        fn equal_keys_hash_alike((ka, kb) in arb_key_pair()) {
            use std::hash::BuildHasher;
            let h = std::collections::hash_map::RandomState::new();
            if ka == kb {
                prop_assert_eq!(h.hash_one(&ka), h.hash_one(&kb));
                prop_assert_eq!(bytes_of(&ka), bytes_of(&kb));
            }
        }

        #[test]
        fn any_null_finds_nulls_in_a_prefix((ka, _kb) in arb_key_pair(), n in 0usize..4) {
            let n = n.min(ka.0.len());
            prop_assert_eq!(any_null(&bytes_of(&ka), n), ka.0[..n].iter().any(Value::is_null));
        }

        #[test]
        fn decoding_inverts_encoding((ka, _kb) in arb_key_pair()) {
            let mut b = Vec::new();
            encode_values_into(&ka.0, &mut b);
            prop_assert_eq!(decode_values(&b), ka.0);
        }

        /// Keys of up to four integers take `encode_bytes`' inline path,
        /// longer ones the general one: both must write the same bytes.
        #[test]
        fn integer_keys_encode_alike_on_either_path(ints in prop::collection::vec(any::<i64>(), 1..7)) {
            let k = Key(ints.into_iter().map(Value::Int).collect());
            let EncodedKey::Bytes(b) = encode(&k, false) else { unreachable!() };
            prop_assert_eq!(&b[..], &bytes_of(&k)[..]);
            prop_assert_eq!(b.spilled(), b.len() > INLINE_KEY);
        }

        #[test]
        fn int_fast_form_preserves_order(a: i64, b: i64) {
            let (ka, kb) = (Key::from(a), Key::from(b));
            prop_assert_eq!(a.cmp(&b), encode(&ka, true).cmp(&encode(&kb, true)));
            prop_assert_eq!(ordered_to_int(int_to_ordered(a)), a);
        }
    }
}

#[cfg(test)]
mod packed_tests {
    use super::*;
    use proptest::prelude::*;

    fn bytes_of(ints: &[i64]) -> ByteKey {
        match encode(&Key(ints.iter().map(|&i| Value::Int(i)).collect()), false) {
            EncodedKey::Bytes(b) => b,
            EncodedKey::U64(_) => unreachable!("byte form asked for"),
        }
    }

    /// Small values of every magnitude, so that field lengths vary.
    fn small() -> impl Strategy<Value = i64> {
        (0u32..40).prop_flat_map(|bits| 0i64..=(1i64 << bits))
    }

    proptest! {
        /// Two keys with one code are one key, whatever their lengths.
        #[test]
        fn packed_codes_are_injective(
            a in proptest::collection::vec(small(), 1..5),
            b in proptest::collection::vec(small(), 1..5),
        ) {
            let (ca, cb) = (packed_ints(&bytes_of(&a)), packed_ints(&bytes_of(&b)));
            if let (Some(x), Some(y)) = (ca, cb) {
                prop_assert!(x >= 1 << 61, "the top bits hold n >= 1");
                prop_assert_eq!(x == y, a == b, "{:?} {:?} -> {:#x} {:#x}", a, b, x, y);
            }
        }
    }

    /// A word filled to its last byte holds its key, and not a longer key
    /// that begins with it (the two words tie).
    #[test]
    fn a_full_word_holds_no_more_than_it_codes() {
        let a = bytes_of(&[7, 2, (1 << 60) + 1]);
        let b = bytes_of(&[7, 2, (1 << 60) + 1, 5]);
        let (wa, whole_a) = order_word_whole(&a);
        let (wb, whole_b) = order_word_whole(&b);
        assert_eq!(wa, wb);
        assert!(whole_a && !whole_b);
        assert_eq!(&key_of_whole_word(wa)[..], &a[..]);
    }

    #[test]
    fn what_packs_and_what_does_not() {
        // TPC-C's order-line key, with room to spare.
        assert!(packed_ints(&bytes_of(&[2, 7, 70_000, 12])).is_some());
        assert!(packed_ints(&bytes_of(&[0])).is_some());
        // A key and its prefix differ (the count is part of the code).
        assert_ne!(
            packed_ints(&bytes_of(&[5, 0])),
            packed_ints(&bytes_of(&[5]))
        );
        // Negative, too large together, or not integers: the map keeps them.
        assert_eq!(packed_ints(&bytes_of(&[-1, 2])), None);
        assert_eq!(packed_ints(&bytes_of(&[i64::MAX, 1])), None);
        assert_eq!(packed_ints(&bytes_of(&[1 << 30, 1 << 30])), None);
        let text = match encode(&Key(vec![Value::from("a"), Value::Int(1)]), false) {
            EncodedKey::Bytes(b) => b,
            EncodedKey::U64(_) => unreachable!(),
        };
        assert_eq!(packed_ints(&text), None);
        assert_eq!(packed_ints(&[]), None);
    }
}
