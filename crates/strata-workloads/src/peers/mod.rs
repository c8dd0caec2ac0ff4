//! The YCSB transactions through other embedded transactional engines, so
//! one command prints Strata and its peers side by side.
//!
//! ```text
//!   key:   u64 (big-endian bytes where the engine wants bytes)
//!   value: N × 8-byte little-endian integers ‖ K × 100-byte text
//!   read:   get(key), sum the attributes read
//!   update: get(key), overwrite the attributes, put(key, value)
//! ```
//!
//! Fairness: Strata is in memory, so no peer syncs to disk. skipdb is in
//! memory (serializable transactions, as Strata's default; its old versions
//! stay until `compact()`, a full-map pass the adapter does not run during a
//! measurement). redb runs on its in-memory backend with
//! `Durability::None` (one writer at a time is its design; read-only
//! transactions use `begin_read`). fjall runs its optimistic transactions
//! with no journal persistence per commit (`durability(None)`), in a
//! temporary directory. RocksDB (feature `rocksdb`, off by default) runs
//! OptimisticTransactionDB or TransactionDB with the WAL disabled.

// With no peer built in, the shared helpers have no caller.
#![cfg_attr(
    not(any(
        feature = "skipdb",
        feature = "fjall",
        feature = "redb",
        feature = "rocksdb"
    )),
    allow(dead_code)
)]

use crate::ycsb::{initial_text, initial_value, Op, YcsbConfig, YcsbEngine, TEXT_BYTES};
use crate::{Outcome, WorkloadError};

#[cfg(feature = "fjall")]
mod fjall_peer;
#[cfg(feature = "redb")]
mod redb_peer;
#[cfg(feature = "rocksdb")]
mod rocksdb_peer;
#[cfg(feature = "skipdb")]
mod skipdb_peer;

/// Names of every peer engine, built in or not.
pub const ALL: [&str; 5] = ["skipdb", "fjall", "redb", "rocksdb-optimistic", "rocksdb"];

/// Opens the peer engine `name` for `cfg`; `NotCompiled` names the cargo
/// feature when this build lacks it.
pub fn open(name: &str, cfg: &YcsbConfig) -> Result<Box<dyn YcsbEngine>, WorkloadError> {
    let _ = cfg;
    // Unused when every peer is built in.
    #[allow(unused)]
    let missing = |feature: &'static str| -> Result<Box<dyn YcsbEngine>, WorkloadError> {
        Err(WorkloadError::NotCompiled {
            what: format!("peer engine {name}"),
            feature,
        })
    };
    match name {
        #[cfg(feature = "skipdb")]
        "skipdb" => Ok(Box::new(skipdb_peer::SkipDb::new())),
        #[cfg(feature = "fjall")]
        "fjall" => Ok(Box::new(fjall_peer::Fjall::new()?)),
        #[cfg(feature = "redb")]
        "redb" => Ok(Box::new(redb_peer::Redb::new()?)),
        #[cfg(feature = "rocksdb")]
        "rocksdb-optimistic" => Ok(Box::new(rocksdb_peer::Rocks::optimistic()?)),
        #[cfg(feature = "rocksdb")]
        "rocksdb" => Ok(Box::new(rocksdb_peer::Rocks::pessimistic()?)),
        #[cfg(not(feature = "skipdb"))]
        "skipdb" => missing("skipdb"),
        #[cfg(not(feature = "fjall"))]
        "fjall" => missing("fjall"),
        #[cfg(not(feature = "redb"))]
        "redb" => missing("redb"),
        #[cfg(not(feature = "rocksdb"))]
        "rocksdb" | "rocksdb-optimistic" => missing("rocksdb"),
        other => Err(WorkloadError::Config(format!(
            "unknown engine {other:?}; expected strata, noop, {}",
            ALL.join(", ")
        ))),
    }
}

/// Whether peer `name` is compiled into this build.
pub fn available(name: &str) -> bool {
    match name {
        "skipdb" => cfg!(feature = "skipdb"),
        "fjall" => cfg!(feature = "fjall"),
        "redb" => cfg!(feature = "redb"),
        "rocksdb" | "rocksdb-optimistic" => cfg!(feature = "rocksdb"),
        _ => false,
    }
}

/// Big-endian key bytes, so byte order is key order.
pub(crate) fn key_bytes(k: u64) -> [u8; 8] {
    k.to_be_bytes()
}

/// The loaded value of row `k`.
pub(crate) fn initial_row(cfg: &YcsbConfig, k: u64) -> Vec<u8> {
    let mut v = Vec::with_capacity(cfg.attributes * 8 + cfg.text_attributes * TEXT_BYTES);
    for a in 0..cfg.attributes {
        v.extend_from_slice(&initial_value(k, a).to_le_bytes());
    }
    for t in 0..cfg.text_attributes {
        v.extend_from_slice(initial_text(k, t).as_bytes());
    }
    v
}

/// What a read of `op` returns from value bytes `v` (the same attributes
/// Strata's read looks at).
pub(crate) fn read_value(cfg: &YcsbConfig, op: &Op, v: &[u8]) -> u64 {
    let width = cfg.attributes + cfg.text_attributes;
    let mut acc = 0u64;
    for i in 0..cfg.attrs_read() {
        let a = (op.first as usize + i) % width;
        acc = acc.wrapping_add(if a < cfg.attributes {
            v.get(a * 8..a * 8 + 8)
                .map_or(0, |b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
        } else {
            TEXT_BYTES as u64
        });
    }
    acc
}

/// Applies update `op` to value bytes `v`.
pub(crate) fn apply_update(cfg: &YcsbConfig, op: &Op, value: i64, v: &mut [u8]) {
    if cfg.update_text {
        let at = cfg.attributes * 8 + op.first as usize * TEXT_BYTES;
        if let Some(slot) = v.get_mut(at..at + TEXT_BYTES) {
            slot.copy_from_slice(crate::ycsb::updated_text(value).as_bytes());
        }
        return;
    }
    for i in 0..cfg.modify_attrs {
        let a = (op.first as usize + i) % cfg.attributes;
        if let Some(slot) = v.get_mut(a * 8..a * 8 + 8) {
            slot.copy_from_slice(&value.wrapping_add(i as i64).to_le_bytes());
        }
    }
}

pub(crate) fn engine_err(e: impl std::fmt::Display) -> WorkloadError {
    WorkloadError::Engine(e.to_string())
}

/// A peer that cannot find a loaded row has lost data: an engine error.
pub(crate) fn missing_row(engine: &str, k: u64) -> WorkloadError {
    WorkloadError::Engine(format!("{engine}: row {k} is missing"))
}

pub(crate) fn aborted() -> Result<Outcome, WorkloadError> {
    Ok(Outcome::Aborted("conflict"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::{DriverConfig, Quiet};
    use std::time::Duration;

    #[test]
    fn value_layout_round_trips_updates() {
        let cfg = YcsbConfig {
            attributes: 3,
            text_attributes: 1,
            modify_attrs: 2,
            ..YcsbConfig::default()
        };
        let mut v = initial_row(&cfg, 5);
        assert_eq!(v.len(), 3 * 8 + TEXT_BYTES);
        let op = Op {
            key: 5,
            update: Some(100),
            first: 2,
        };
        apply_update(&cfg, &op, 100, &mut v);
        // Attributes 2 and 0 (wrapping) now hold 100 and 101; 1 is untouched.
        let int = |a: usize| i64::from_le_bytes(v[a * 8..a * 8 + 8].try_into().unwrap());
        assert_eq!((int(0), int(1), int(2)), (101, initial_value(5, 1), 100));
        let read = Op {
            key: 5,
            update: None,
            first: 0,
        };
        assert_eq!(
            read_value(&cfg, &read, &v),
            (101 + initial_value(5, 1) + 100) as u64 + TEXT_BYTES as u64
        );
    }

    #[test]
    fn unknown_and_unbuilt_engines_are_clear_errors() {
        let cfg = YcsbConfig::default();
        let e = open("oracle", &cfg).err().unwrap().to_string();
        assert!(e.contains("unknown engine"), "{e}");
        if !available("rocksdb") {
            let e = open("rocksdb", &cfg).err().unwrap().to_string();
            assert!(e.contains("--features rocksdb"), "{e}");
            assert!(e.contains("not compiled into this build"), "{e}");
            assert!(!e.contains("not implemented"), "{e}");
        }
    }

    /// Every built peer loads, runs all three mixes, and keeps its rows.
    #[test]
    fn built_peers_run_the_mixes() {
        for name in ALL.iter().filter(|n| available(n)) {
            for read_ratio in [1.0, 0.8, 0.2] {
                let cfg = YcsbConfig {
                    records: 500,
                    read_ratio,
                    theta: 0.5,
                    threads: 2,
                    ..YcsbConfig::default()
                };
                let engine = open(name, &cfg).unwrap();
                let d = DriverConfig {
                    warmup: Duration::ZERO,
                    duration: Duration::from_millis(150),
                    series: false,
                    huge_pages: Default::default(),
                    ab_interval: None,
                };
                let r = crate::ycsb::run(engine.as_ref(), &cfg, &d, &mut Quiet)
                    .unwrap_or_else(|e| panic!("{name}: {e}"));
                assert!(r.run.committed > 0, "{name} {read_ratio}");
                assert_eq!(r.engine, *name);
            }
        }
    }
}
