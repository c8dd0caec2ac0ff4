//! The design space `explore` searches: every protocol × version storage ×
//! collector × index pointers × secondary-index kind that
//! `Options::validate` accepts, narrowed by the user's flags.
//!
//! ```text
//!   Protocol::ALL × VersionStorage::ALL × GcPolicy::ALL × IndexPointers::ALL × IndexKind::ALL
//!        │ narrowed by --protocol/--storage/--gc/--pointers/--index-kind
//!        │ folded where the workload cannot tell two points apart
//!        ▼ kept where Options::validate() says ok (the validity matrix)
//!   [Design]  ── options() ──> Options ;  rust() / flags() ──> the recommendation
//! ```
//!
//! Folding: without secondary indexes, tuple-id and primary-key pointers are
//! the same engine (only secondary entries differ), and the index kind does
//! not exist; those points are explored once (as `tuple-id`, `standard`) and
//! the report says so. Physical pointers stay: they reach the primary index
//! too (Wu et al. §5).

use strata::{GcPolicy, IndexKind, IndexPointers, Options, Protocol, VersionStorage};

/// One point of the design space.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Design {
    pub protocol: Protocol,
    pub storage: VersionStorage,
    pub gc: GcPolicy,
    pub pointers: IndexPointers,
    pub index_kind: IndexKind,
}

/// The dimensions' allowed values (empty: all).
#[derive(Debug, Clone, Default)]
pub struct Narrow {
    pub protocols: Vec<Protocol>,
    pub storages: Vec<VersionStorage>,
    pub gcs: Vec<GcPolicy>,
    pub pointers: Vec<IndexPointers>,
    pub index_kinds: Vec<IndexKind>,
}

fn or_all<T: Copy>(given: &[T], all: &[T]) -> Vec<T> {
    if given.is_empty() {
        all.to_vec()
    } else {
        given.to_vec()
    }
}

/// The points to explore, in a fixed order, and how many valid points the
/// folding merged.
pub fn designs(n: &Narrow, secondary_indexes: bool) -> (Vec<Design>, usize) {
    let pointers: Vec<IndexPointers> = or_all(&n.pointers, &IndexPointers::ALL);
    let kinds: Vec<IndexKind> = or_all(&n.index_kinds, &IndexKind::ALL);
    let mut out = Vec::new();
    let mut folded = 0;
    for protocol in or_all(&n.protocols, &Protocol::ALL) {
        for storage in or_all(&n.storages, &VersionStorage::ALL) {
            for gc in or_all(&n.gcs, &GcPolicy::ALL) {
                for &ptr in &pointers {
                    for &index_kind in &kinds {
                        let d = Design {
                            protocol,
                            storage,
                            gc,
                            pointers: ptr,
                            index_kind,
                        };
                        if d.options().validate().is_err() {
                            continue;
                        }
                        let folds = !secondary_indexes
                            && (index_kind != kinds[0]
                                || (ptr == IndexPointers::LogicalPrimaryKey
                                    && pointers.contains(&IndexPointers::LogicalTupleId)));
                        if folds {
                            folded += 1;
                        } else {
                            out.push(d);
                        }
                    }
                }
            }
        }
    }
    (out, folded)
}

impl Design {
    /// The engine's options for this point (everything else default).
    pub fn options(&self) -> Options {
        Options::default()
            .protocol(self.protocol)
            .version_storage(self.storage)
            .gc(self.gc)
            .index_pointers(self.pointers)
    }

    /// A short label: `ssn/n2o/txn/tuple-id` (and `/mvpbt` for MV-PBT
    /// secondary indexes).
    pub fn label(&self) -> String {
        let mut s = format!(
            "{}/{}/{}/{}",
            self.protocol.name(),
            self.storage,
            self.gc,
            strata::matrix::pointers_name(self.pointers)
        );
        if self.index_kind != IndexKind::Standard {
            s.push('/');
            s.push_str(self.index_kind.name());
        }
        s
    }

    /// The options as Rust an application pastes.
    pub fn rust(&self) -> String {
        let mut s = format!(
            "let db = strata::Database::open(\n    strata::Options::default()\n        \
             .protocol(strata::Protocol::{:?})\n        \
             .version_storage(strata::VersionStorage::{:?})\n        \
             .gc(strata::GcPolicy::{:?})\n        \
             .index_pointers(strata::IndexPointers::{:?}),\n)?;",
            self.protocol, self.storage, self.gc, self.pointers
        );
        if self.index_kind != IndexKind::Standard {
            s.push_str(&format!(
                "\n// and each secondary index built as\n// db.create_index_as(name, &table, \
                 &columns, unique, strata::IndexKind::{:?})?;",
                self.index_kind
            ));
        }
        s
    }

    /// The design's `strata bench` flags.
    pub fn flags(&self) -> String {
        format!(
            "--protocol {} --storage {} --gc {} --index-pointers {}",
            self.protocol.name(),
            self.storage,
            self.gc,
            strata::matrix::pointers_name(self.pointers)
        )
    }

    /// The dimensions on which `other` differs, as `name: ours -> theirs`.
    pub fn differences(&self, other: &Design) -> Vec<String> {
        let mut d = Vec::new();
        let mut diff = |name: &str, a: String, b: String| {
            if a != b {
                d.push(format!("{name} {b}"));
            }
        };
        diff(
            "protocol",
            self.protocol.name().into(),
            other.protocol.name().into(),
        );
        diff(
            "storage",
            self.storage.to_string(),
            other.storage.to_string(),
        );
        diff("gc", self.gc.to_string(), other.gc.to_string());
        diff(
            "pointers",
            strata::matrix::pointers_name(self.pointers).into(),
            strata::matrix::pointers_name(other.pointers).into(),
        );
        diff(
            "index",
            self.index_kind.name().into(),
            other.index_kind.name().into(),
        );
        d
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_point_is_valid_and_every_valid_point_is_there_once() {
        let (all, folded) = designs(&Narrow::default(), true);
        assert_eq!(folded, 0);
        let valid = strata::matrix::validity_matrix()
            .into_iter()
            .filter(|c| c.verdict.is_ok())
            .count();
        // Both index kinds of every valid cell.
        assert_eq!(all.len(), valid * IndexKind::ALL.len());
        let distinct: std::collections::HashSet<Design> = all.iter().copied().collect();
        assert_eq!(distinct.len(), all.len());
        for d in &all {
            d.options().validate().unwrap();
        }
    }

    #[test]
    fn without_secondary_indexes_pkey_pointers_and_index_kinds_fold() {
        let (with, _) = designs(&Narrow::default(), true);
        let (without, folded) = designs(&Narrow::default(), false);
        assert_eq!(without.len() + folded, with.len());
        assert!(without.iter().all(|d| d.index_kind == IndexKind::Standard
            && d.pointers != IndexPointers::LogicalPrimaryKey));
        assert!(without
            .iter()
            .any(|d| d.pointers == IndexPointers::Physical));
        // Asked for pkey alone, it is kept (nothing to fold it into).
        let n = Narrow {
            pointers: vec![IndexPointers::LogicalPrimaryKey],
            ..Narrow::default()
        };
        let (only, _) = designs(&n, false);
        assert!(!only.is_empty());
        assert!(only
            .iter()
            .all(|d| d.pointers == IndexPointers::LogicalPrimaryKey));
    }

    #[test]
    fn flags_narrow_the_space() {
        let n = Narrow {
            protocols: vec![Protocol::SiSsn, Protocol::Mvto],
            storages: vec![VersionStorage::AppendNewToOld],
            gcs: vec![GcPolicy::TransactionLevel],
            ..Narrow::default()
        };
        let (d, _) = designs(&n, false);
        let labels: Vec<String> = d.iter().map(Design::label).collect();
        assert_eq!(
            labels,
            // In the order given.
            [
                "ssn/n2o/txn/tuple-id",
                "ssn/n2o/txn/physical",
                "mvto/n2o/txn/tuple-id",
                "mvto/n2o/txn/physical"
            ]
        );
        assert_eq!(d.len(), 4);
    }

    #[test]
    fn snippets_and_flags_name_real_variants() {
        let (all, _) = designs(&Narrow::default(), true);
        for d in &all {
            let rust = d.rust();
            assert!(rust.contains(&format!("strata::Protocol::{:?}", d.protocol)));
            assert!(rust.contains(&format!("strata::GcPolicy::{:?}", d.gc)));
            // The flags parse back with the CLI's own parsers.
            let flags = d.flags();
            let f: Vec<&str> = flags.split(' ').collect();
            assert_eq!(crate::parse_protocol(f[1]).unwrap(), d.protocol);
            assert_eq!(crate::parse_storage(f[3]).unwrap(), d.storage);
            assert_eq!(crate::parse_gc(f[5]).unwrap(), d.gc);
            assert_eq!(crate::parse_pointers(f[7]).unwrap(), d.pointers);
        }
    }
}
