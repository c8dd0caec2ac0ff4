//! Contention regulation: how long a transaction that lost a conflict
//! waits before it runs again (`Options::backoff`).
//!
//! `Backoff::Exponential` waits a random time below 2^attempt µs, each
//! thread on its own. `Backoff::Regulated` is Cicada's scheme (Lim et
//! al., SIGMOD 2017, "contention regulation"): every retry waits a random
//! time below one bound shared by the database, and the bound is tuned by
//! hill climbing on the commit rate, so it settles where the abort rate
//! costs least throughput instead of where each thread's streak of bad
//! luck puts it:
//!
//! ```text
//!  every PERIOD (checked by retrying threads only, under a try-lock):
//!    rate = commits in the period / its length
//!    rate < previous rate  -> direction = -direction
//!    max_backoff += direction * STEP      (within 0 ..= MAX)
//!  a retry: wait uniform [0, max_backoff)
//! ```
//!
//! Nothing here runs on a commit: the commit counts are the transaction
//! slots' own (`stats::TxnCounts`), summed once a period by the thread
//! that adjusts. **Invariant owned here:** the bound stays within
//! `0 ..= MAX`, and only one thread adjusts it per period.

use crate::options::Backoff;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

/// How often the bound moves (Cicada's period).
const PERIOD: Duration = Duration::from_millis(5);
/// How far one period moves it, in ns.
const STEP_NS: u64 = 500;
/// The largest bound, in ns.
const MAX_NS: u64 = 1_000_000;
/// Where it starts, in ns.
const START_NS: u64 = 2_000;

/// One database's regulator.
pub(crate) struct Regulator {
    kind: Backoff,
    /// The bound of a regulated wait, in ns.
    max_backoff_ns: AtomicU64,
    climb: Mutex<Climb>,
}

/// The hill climber's state (its lock is only tried).
struct Climb {
    since: Instant,
    commits: u64,
    /// The previous period's commit rate (commits per second).
    rate: f64,
    /// +1 or -1: which way the bound moves next.
    direction: i64,
}

impl Regulator {
    pub fn new(kind: Backoff) -> Regulator {
        Regulator {
            kind,
            max_backoff_ns: AtomicU64::new(START_NS),
            climb: Mutex::new(Climb {
                since: Instant::now(),
                commits: 0,
                rate: 0.0,
                direction: 1,
            }),
        }
    }

    /// The current bound of a regulated wait.
    pub fn max_backoff(&self) -> Duration {
        Duration::from_nanos(self.max_backoff_ns.load(Relaxed))
    }

    /// Waits after the `attempt`-th conflict in a row; `commits` sums the
    /// database's commits (called at most once a period).
    pub fn wait(&self, attempt: u32, commits: impl FnOnce() -> u64) {
        match self.kind {
            Backoff::Exponential => backoff(attempt),
            Backoff::Regulated => {
                self.adjust(Instant::now(), commits);
                let bound = self.max_backoff_ns.load(Relaxed);
                wait(Duration::from_nanos(seed() % bound.max(1)));
            }
        }
    }

    /// Moves the bound if a period has passed and no other thread is
    /// moving it.
    fn adjust(&self, now: Instant, commits: impl FnOnce() -> u64) {
        let Some(mut c) = self.climb.try_lock() else {
            return;
        };
        let elapsed = now.saturating_duration_since(c.since);
        if elapsed < PERIOD {
            return;
        }
        let total = commits();
        let rate = total.saturating_sub(c.commits) as f64 / elapsed.as_secs_f64();
        let bound = self.max_backoff_ns.load(Relaxed);
        let (next, direction) = climb(bound, c.direction, c.rate, rate);
        self.max_backoff_ns.store(next, Relaxed);
        *c = Climb {
            since: now,
            commits: total,
            rate,
            direction,
        };
    }
}

/// Waits before retry number `attempt` (1, 2, ...) of a transaction lost
/// to a conflict: a random time below 2^attempt microseconds (capped at
/// about 1 ms). `Database::run` uses it under `Backoff::Exponential`;
/// callers with their own retry loop can too (or
/// `Database::backoff_after_conflict`, which follows the database's
/// `Options::backoff`). Waits under 100 us yield the CPU in a loop until
/// their time has passed instead of sleeping: a sleep lasts at least the
/// thread's timer slack (50 us by default on Linux; a 2 us sleep took
/// 77 us on the development VM), so every short backoff was a long one.
pub fn backoff(attempt: u32) {
    wait(backoff_wait(attempt, seed()));
}

/// Randomised so that two transactions that keep colliding drift apart.
fn seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos() as u64)
        .unwrap_or(7)
}

/// Waits `d`: yielding in a loop below [`SLEEP_FROM`], else asleep.
fn wait(d: Duration) {
    if d >= SLEEP_FROM {
        std::thread::sleep(d);
        return;
    }
    let until = Instant::now() + d;
    loop {
        std::thread::yield_now();
        if Instant::now() >= until {
            break;
        }
    }
}

/// Backoffs shorter than this yield in a loop; longer ones sleep.
const SLEEP_FROM: Duration = Duration::from_micros(100);

/// The wait before retry `attempt`, from a random `seed`: below 2^attempt
/// us, capped at 2^10.
fn backoff_wait(attempt: u32, seed: u64) -> Duration {
    let cap_us = 1u64 << attempt.min(10);
    Duration::from_micros(seed % cap_us)
}

/// One hill-climbing step: the bound and direction after a period whose
/// commit rate was `rate`, the one before it `previous`.
fn climb(bound: u64, direction: i64, previous: f64, rate: f64) -> (u64, i64) {
    let direction = if rate < previous {
        -direction
    } else {
        direction
    };
    let next = if direction > 0 {
        bound.saturating_add(STEP_NS).min(MAX_NS)
    } else {
        bound.saturating_sub(STEP_NS)
    };
    (next, direction)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Short backoffs yield until their time is up (a sleep would last
    /// the timer slack, ~50 us, whatever was asked); the wait stays below
    /// 2^attempt us, capped at 2^10.
    #[test]
    fn exponential_backoffs_stay_below_their_cap() {
        let us = Duration::from_micros;
        for attempt in 1..=6 {
            for seed in [0, 1, 7, 63, 1_000_003, u64::MAX] {
                let d = backoff_wait(attempt, seed);
                assert!(d < us(1 << attempt), "{attempt} {seed}");
                assert!(d < SLEEP_FROM, "a wait under 64 us would sleep");
            }
        }
        assert_eq!(backoff_wait(10, 500), us(500));
        assert_eq!(backoff_wait(30, 1023), us(1023));
        assert_eq!(backoff_wait(30, 1024), us(0), "capped at 2^10 us");
        assert_eq!(backoff_wait(9, 99), us(99));
        // The real thing returns (one yield at least, then its time).
        backoff(1);
        backoff(4);
    }

    #[test]
    fn the_bound_keeps_its_direction_while_the_rate_improves() {
        assert_eq!(climb(2_000, 1, 100.0, 120.0), (2_500, 1));
        assert_eq!(climb(2_000, -1, 100.0, 120.0), (1_500, -1));
    }

    #[test]
    fn the_bound_turns_back_when_the_rate_drops() {
        assert_eq!(climb(2_000, 1, 120.0, 100.0), (1_500, -1));
        assert_eq!(climb(2_000, -1, 120.0, 100.0), (2_500, 1));
    }

    #[test]
    fn the_bound_stays_within_its_range() {
        assert_eq!(climb(0, -1, 0.0, 0.0), (0, -1));
        assert_eq!(climb(MAX_NS, 1, 0.0, 1.0), (MAX_NS, 1));
    }

    /// The regulator moves once per period, from the commits it is handed.
    #[test]
    fn a_regulated_wait_adjusts_once_a_period() {
        let r = Regulator::new(Backoff::Regulated);
        let t0 = r.climb.lock().since;
        // Within the period: the commit count is not even asked for.
        r.adjust(t0, || panic!("asked for commits within the period"));
        assert_eq!(r.max_backoff(), Duration::from_nanos(START_NS));
        // A period later with commits: the rate rose from 0, the bound goes up.
        r.adjust(t0 + PERIOD, || 1_000);
        assert_eq!(r.max_backoff(), Duration::from_nanos(START_NS + STEP_NS));
        // Fewer commits the next period: it turns back down.
        r.adjust(t0 + PERIOD * 2, || 1_100);
        assert_eq!(r.max_backoff(), Duration::from_nanos(START_NS));
    }
}
