//! Waiting in unit tests on observed state, never on time: a test waits
//! for what another thread (or the epoch) brings about, and the only clock
//! is a generous bound that turns a hang into a failure. The integration
//! tests compile this same file into `tests/common` (std only: keep it so).

use std::time::{Duration, Instant};

/// How long a test waits for a state before it fails: far beyond any
/// loaded machine's delays, it asserts nothing about speed.
pub const HANG_GUARD: Duration = Duration::from_secs(120);

/// Calls `reached` (which may also do work: flush the epoch, run GC)
/// until it returns true; false once [`HANG_GUARD`] has passed without.
pub fn eventually(mut reached: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + HANG_GUARD;
    loop {
        if reached() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
}

/// Runs `f` on a thread of its own and returns what it returns (its panic
/// goes on as the caller's); if it has not finished within
/// [`HANG_GUARD`], fails saying `what` deadlocked, instead of hanging.
pub fn within<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    let h = std::thread::spawn(move || {
        // A send fails only once the caller has given up.
        let _ = tx.send(f());
    });
    match rx.recv_timeout(HANG_GUARD) {
        Ok(v) => {
            h.join().expect("sent its result");
            v
        }
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => match h.join() {
            Err(panic) => std::panic::resume_unwind(panic),
            Ok(()) => unreachable!("the thread sends before it ends"),
        },
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
            panic!("{what}: not done in {HANG_GUARD:?}, deadlocked")
        }
    }
}
