//! Concurrency control protocols.
//!
//! The transaction code (`crate::txn`) owns the common path — chains, locks
//! on chain heads, commit timestamps, stamping, undo — and asks the protocol
//! at four points, with one `match` each:
//!
//! ```text
//!  read_tuple ──> which version, and what to remember about the read
//!  lock_head  ──> may this transaction overwrite the head?
//!  validate   ──> after the commit timestamp: may it commit?
//!  post/abort ──> publish stamps, release read locks, forget registrations
//! ```
//!
//! | protocol | reads see        | write check            | commit check                 | phantoms            |
//! |----------|------------------|------------------------|------------------------------|---------------------|
//! | MVTO     | ts order         | read_ts, begin <= ts   | none                         | table predicate ts  |
//! | MVOCC    | snapshot         | lock only              | read set + scan set current  | scan re-validation  |
//! | MV2PL    | latest (locked)  | no other readers       | scan set                     | scan re-validation  |
//! | SI       | snapshot         | first updater wins     | none                         | (allowed)           |
//! | SI+SSN   | snapshot         | first updater wins     | exclusion window pi > eta    | re-validation + scan records |
//! | SI+SSI   | snapshot         | first updater wins     | no pivot (in and out edges, partners not aborted) | re-validation + scan records |

pub mod mv2pl;
pub mod mvocc;
pub mod mvto;
pub mod predicate;
pub mod ssi;
pub mod ssn;

use parking_lot::Mutex;
use rustc_hash::FxHashMap;

/// A map from version address to a small list, split over shards so that
/// unrelated rows do not contend on one lock. Used for SSI's SIREAD marks.
pub(crate) struct ShardedMultiMap<V> {
    shards: Box<[Shard<V>]>,
}

type Shard<V> = Mutex<FxHashMap<usize, Vec<V>>>;

const SHARDS: usize = 64;

impl<V: Clone> ShardedMultiMap<V> {
    pub fn new() -> Self {
        ShardedMultiMap {
            shards: (0..SHARDS)
                .map(|_| Mutex::new(FxHashMap::default()))
                .collect(),
        }
    }
    fn shard(&self, key: usize) -> &Shard<V> {
        // Versions are 64-byte aligned-ish allocations: drop the low bits.
        &self.shards[(key >> 6) % SHARDS]
    }
    pub fn add(&self, key: usize, v: V) {
        self.shard(key).lock().entry(key).or_default().push(v);
    }
    pub fn get(&self, key: usize) -> Vec<V> {
        self.shard(key)
            .lock()
            .get(&key)
            .cloned()
            .unwrap_or_default()
    }
    /// Removes, over all keys, the values for which `f` is true.
    pub fn prune(&self, mut f: impl FnMut(&V) -> bool) {
        for shard in self.shards.iter() {
            let mut s = shard.lock();
            s.retain(|_, list| {
                list.retain(|v| !f(v));
                !list.is_empty()
            });
        }
    }
}
