//! What a dependent random memory access costs on this machine: a pointer
//! chase through 1M objects of 8, 80 and 232 bytes (232 is a YCSB version
//! with 10 Int columns). The engine's point read makes about three such
//! accesses (hash index, indirection slot, version), which bounds its
//! latency from below; compare with `cargo bench -p strata --bench txn`.
//!
//! The second part replays a point read's memory accesses with no engine
//! code around them: a 16-byte hash entry (key, tuple id, chain-head hint)
//! in a table of 2M entries, then the indirection slot (8 B, 1M of them)
//! and the 232-byte version, the version prefetched from the hint so its
//! miss overlaps the slot's. Each read's key depends on the last read's
//! value, so reads do not overlap each other: this is the floor a single
//! get cannot go below on this machine (`cargo bench -p strata --bench
//! txn` adds begin, commit and the protocol on top).
//!
//! `cargo run --release -p strata --example memory_latency`

use std::time::Instant;

// The allocator of the bench and the CLI: its large allocations get
// transparent huge pages here (glibc's do not under THP `madvise`), so
// TLB misses do not inflate the figures.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// 0..n in a random order (Fisher-Yates with xorshift).
fn shuffled(n: usize, seed: u64) -> Vec<usize> {
    let mut perm: Vec<usize> = (0..n).collect();
    let mut x = seed;
    for i in (1..n).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        perm.swap(i, (x % (i as u64 + 1)) as usize);
    }
    perm
}

fn chase(n: usize, words: usize) {
    // A random cyclic permutation, so every step depends on the last load.
    let perm = shuffled(n, 88172645463325252);
    let mut mem = vec![0u64; n * words];
    for i in 0..n {
        mem[perm[i] * words] = (perm[(i + 1) % n] * words) as u64;
    }
    let iters = 2_000_000;
    let mut p = 0usize;
    let t = Instant::now();
    for _ in 0..iters {
        p = mem[p] as usize;
    }
    println!(
        "{n} objects of {} bytes ({} MiB): {:.1} ns per dependent access",
        words * 8,
        (n * words * 8) >> 20,
        t.elapsed().as_nanos() as f64 / iters as f64
    );
    std::hint::black_box(p);
}

/// Bytes of one version (header 56 + 11 values of 16 B = 232, rounded up
/// to the allocator's 256-byte class).
const VERSION: usize = 256;

fn mix(k: u64) -> u64 {
    let mut z = k.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[inline(always)]
fn prefetch(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch never faults and has no architectural effect.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(p as *const i8);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Dependent point reads over `n` rows; `hinted`: prefetch the version from
/// the hash entry before loading the slot (two misses in a row instead of
/// three).
fn point_reads(n: usize, hinted: bool) {
    let cap = (n * 2).next_power_of_two();
    // entry = [key, tuple id | version index << 32], linear probing.
    let mut table = vec![[u64::MAX, 0u64]; cap];
    // Rows are placed in a shuffled order, as versions of rows written at
    // random end up scattered over the heap.
    let place = shuffled(n, 0x2545_F491_4F6C_DD1D);
    for (k, &at) in place.iter().enumerate() {
        let mut i = mix(k as u64) as usize & (cap - 1);
        while table[i][0] != u64::MAX {
            i = (i + 1) & (cap - 1);
        }
        table[i] = [k as u64, k as u64 | (at as u64) << 32];
    }
    let slots: Vec<u64> = place.iter().map(|&at| at as u64).collect();
    let mut versions = vec![0u8; n * VERSION];
    for (k, &at) in place.iter().enumerate() {
        versions[at * VERSION + 72..at * VERSION + 80].copy_from_slice(&(k as u64).to_le_bytes());
    }
    let iters = 2_000_000;
    let mut key = 1u64;
    let mut step = 0u64;
    let t = Instant::now();
    for _ in 0..iters {
        let mut i = mix(key) as usize & (cap - 1);
        while table[i][0] != key {
            i = (i + 1) & (cap - 1);
        }
        let v = table[i][1];
        if hinted {
            let hint = versions.as_ptr().wrapping_add((v >> 32) as usize * VERSION);
            prefetch(hint);
            prefetch(hint.wrapping_add(64));
        }
        let at = slots[(v & 0xFFFF_FFFF) as usize] as usize;
        let val = u64::from_le_bytes(
            versions[at * VERSION + 72..at * VERSION + 80]
                .try_into()
                .unwrap(),
        );
        // The next key depends on this read's value.
        step = step.wrapping_add(0x9E37_79B9_7F4A_7C15);
        key = mix(val ^ step) % n as u64;
    }
    println!(
        "point read, {n} rows, {}: {:.1} ns",
        if hinted {
            "entry -> (slot | hinted version)"
        } else {
            "entry -> slot -> version"
        },
        t.elapsed().as_nanos() as f64 / iters as f64
    );
    std::hint::black_box(key);
}

fn main() {
    for words in [1, 10, 29] {
        chase(1_000_000, words);
    }
    for hinted in [false, true] {
        point_reads(1_000_000, hinted);
    }
}
