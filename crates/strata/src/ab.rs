//! A switch for measuring a code change inside one benchmark process.
//!
//! On a noisy machine (this project's 2-core VM flips between a ~65 ns and
//! a ~315 ns cross-core round trip, and its neighbours come and go),
//! interleaved runs of two builds cannot resolve a few percent: the same
//! build moves 20-40% from run to run. Within one process the noise is
//! slower than a second, so the benchmark driver can flip this switch
//! every few hundred milliseconds (`strata bench ycsb --ab-ms 500`) and
//! compare each interval with its neighbour, which saw the same machine:
//!
//! ```text
//!  switch:   off | on  | off | on  | off | on  | ...     (every --ab-ms)
//!  txn/s:    800   820   510   525   790   812          (the VM changes mode)
//!  pairs:    (800, 820) (510, 525) (790, 812) -> on/off 1.025, 1.029, 1.028
//! ```
//!
//! To measure a change, put both versions of the code in one build behind
//! [`on`], run the benchmark with `--ab-ms`, and read the median on/off
//! ratio and its quartiles (an unswitched build gives the A/A spread).
//! Committed engine code never tests the switch: it is for experiments
//! only, and costs nothing where it is not tested (`docs/EXTENDING.md`,
//! "Measuring a change").

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

/// The switch (off unless a benchmark driver with an A/B interval runs).
static ON: AtomicBool = AtomicBool::new(false);

/// Whether the experiment's "on" variant should run now.
#[inline(always)]
pub fn on() -> bool {
    ON.load(Relaxed)
}

/// Sets the switch (the benchmark driver's; Relaxed: each interval's
/// measurement tolerates workers that see the flip a moment late).
pub fn set(on: bool) {
    ON.store(on, Relaxed);
}
