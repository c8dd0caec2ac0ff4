//! What handing a cache line from one core to another costs on this
//! machine now: two threads bounce one atomic word back and forth, and the
//! median round trip (two transfers) over `SECONDS` (default 1) is printed.
//!
//! On a virtual machine this is not a constant. On the 2-core development
//! VM it flips, for seconds to minutes at a time, between about 80 ns and
//! about 390 ns (the host moves the two virtual CPUs between cores that
//! share a cache and cores that do not), and every workload whose threads
//! share written lines follows it: YCSB 50% updates at θ 0.9 runs about
//! 1.5x faster in the fast mode. `scripts/ccbench-vs-strata.sh` runs this
//! before and after every run and reports each mode apart.
//!
//! ```text
//!  main:  store v+1 ──────────────> echo: sees odd v+1, stores v+2
//!         sees v+2 <──────────────        (one round trip: two transfers)
//! ```
//!
//! `cargo run --release -p strata --example core_latency -- 0.5`
//! prints `core_round_trip_ns <median> (<min>-<max> over <n> samples)`.

use std::hint::spin_loop;
use std::sync::atomic::{
    AtomicBool, AtomicU64,
    Ordering::{Acquire, Relaxed, Release},
};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The bounced word, alone on its cache lines (two: the adjacent-line
/// prefetcher pairs them).
#[repr(align(128))]
struct Line(AtomicU64);

/// Round trips timed per sample.
const TRIPS: u32 = 2000;

fn main() {
    let secs: f64 = match std::env::args().nth(1) {
        None => 1.0,
        Some(s) => match s.parse() {
            Ok(v) if v > 0.0 && v <= 600.0 => v,
            _ => {
                eprintln!("usage: core_latency [SECONDS in (0, 600]], got {s:?}");
                std::process::exit(2);
            }
        },
    };
    let line = Arc::new(Line(AtomicU64::new(0)));
    let stop = Arc::new(AtomicBool::new(false));
    let echo = {
        let (line, stop) = (Arc::clone(&line), Arc::clone(&stop));
        std::thread::spawn(move || {
            while !stop.load(Relaxed) {
                let v = line.0.load(Acquire);
                if v & 1 == 1 {
                    line.0.store(v + 1, Release);
                } else {
                    spin_loop();
                }
            }
        })
    };
    let mut samples = Vec::new();
    let end = Instant::now() + Duration::from_secs_f64(secs);
    while Instant::now() < end {
        let t0 = Instant::now();
        for _ in 0..TRIPS {
            // Even here: the echo thread has answered the last trip.
            let v = line.0.load(Relaxed) + 1;
            line.0.store(v, Release);
            while line.0.load(Acquire) == v {
                spin_loop();
            }
        }
        samples.push(t0.elapsed().as_nanos() as f64 / f64::from(TRIPS));
    }
    stop.store(true, Relaxed);
    echo.join().expect("echo thread");
    samples.sort_by(f64::total_cmp);
    let n = samples.len();
    println!(
        "core_round_trip_ns {:.0} ({:.0}-{:.0} over {n} samples)",
        samples[n / 2],
        samples[0],
        samples[n - 1]
    );
}
