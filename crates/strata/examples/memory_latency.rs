//! What a dependent random memory access costs on this machine: a pointer
//! chase through 1M objects of 8, 80 and 232 bytes (232 is a YCSB version
//! with 10 Int columns). The engine's point read makes about three such
//! accesses (hash index, indirection slot, version), which bounds its
//! latency from below; compare with `cargo bench -p strata --bench txn`.
//!
//! `cargo run --release -p strata --example memory_latency`
//! (try `GLIBC_TUNABLES=glibc.malloc.hugetlb=1` to see what TLB misses cost)

use std::time::Instant;

fn chase(n: usize, words: usize) {
    // A random cyclic permutation, so every step depends on the last load.
    let mut perm: Vec<usize> = (0..n).collect();
    let mut x = 88172645463325252u64;
    for i in (1..n).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        perm.swap(i, (x % (i as u64 + 1)) as usize);
    }
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

fn main() {
    for words in [1, 10, 29] {
        chase(1_000_000, words);
    }
}
