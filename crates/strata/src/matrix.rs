//! The validity matrix: which combinations of the design space Strata
//! accepts, computed by asking [`Options::validate`] itself, so the matrix
//! and the check can never disagree.
//!
//! ```text
//!  protocol x storage x gc x pointers ──validate()──> ok | "why not"
//!                 │
//!                 └─ README's table = matrix_markdown() (a test compares)
//! ```
//!
//! The protocol changes few verdicts (OCC refuses dead-zone GC, which would
//! free versions its read set names; see `cc::occ`), so the printed table
//! folds it away: a cell that only some protocols refuse reads
//! `ok except <protocols>`. [`validity_matrix`] returns every protocol's
//! cells.

use crate::error::Error;
use crate::options::{GcPolicy, IndexPointers, Options, Protocol, VersionStorage};

/// Every index-pointer scheme, in print order (`IndexPointers::ALL`).
pub const INDEX_POINTERS: [IndexPointers; IndexPointers::ALL.len()] = IndexPointers::ALL;

/// A short name of an index-pointer scheme (`tuple-id`, `pkey`, `physical`).
pub fn pointers_name(p: IndexPointers) -> &'static str {
    match p {
        IndexPointers::LogicalTupleId => "tuple-id",
        IndexPointers::LogicalPrimaryKey => "pkey",
        IndexPointers::Physical => "physical",
    }
}

/// One cell: a combination and `validate()`'s verdict on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MatrixCell {
    pub protocol: Protocol,
    pub storage: VersionStorage,
    pub gc: GcPolicy,
    pub pointers: IndexPointers,
    /// `Ok` or the `InvalidConfig` message naming the conflict.
    pub verdict: Result<(), String>,
}

impl Options {
    /// `validate()`'s verdict on every protocol x storage x GC x pointer
    /// combination (see [`crate::matrix`]).
    pub fn validity_matrix() -> Vec<MatrixCell> {
        validity_matrix()
    }
}

/// Every protocol x storage x GC x index-pointer combination, with
/// `Options::validate()`'s verdict on the default options so configured.
pub fn validity_matrix() -> Vec<MatrixCell> {
    let mut out = Vec::new();
    for protocol in Protocol::ALL {
        for storage in VersionStorage::ALL {
            for gc in GcPolicy::ALL {
                for pointers in INDEX_POINTERS {
                    let verdict = match Options::default()
                        .protocol(protocol)
                        .version_storage(storage)
                        .gc(gc)
                        .index_pointers(pointers)
                        .validate()
                    {
                        Ok(()) => Ok(()),
                        Err(Error::InvalidConfig(m)) => Err(m),
                        Err(e) => Err(e.to_string()),
                    };
                    out.push(MatrixCell {
                        protocol,
                        storage,
                        gc,
                        pointers,
                        verdict,
                    });
                }
            }
        }
    }
    out
}

/// A short label for a refusal, from its message.
fn label(msg: &str) -> &'static str {
    if msg.contains("not implemented") {
        "not implemented"
    } else if msg.contains("Cooperative") {
        "no: COOP needs O2N"
    } else if msg.contains("siro (VersionStorage::Siro) needs") {
        "no: SIRO needs dead-zone GC"
    } else if msg.contains("physical index pointers") {
        "no: physical needs append-only"
    } else if msg.contains("protocol occ") {
        "no: OCC reads past dead zones"
    } else {
        "no"
    }
}

/// The matrix as a Markdown table: storage x GC rows, index-pointer
/// columns; a cell refused by some protocols only names them (see the
/// module doc).
pub fn matrix_markdown() -> String {
    let cells = validity_matrix();
    let mut s = String::from("| storage | gc |");
    for p in INDEX_POINTERS {
        s.push_str(&format!(" {} |", pointers_name(p)));
    }
    s.push_str("\n|---|---|");
    for _ in INDEX_POINTERS {
        s.push_str("---|");
    }
    s.push('\n');
    for storage in VersionStorage::ALL {
        for gc in GcPolicy::ALL {
            s.push_str(&format!("| {storage} | {gc} |"));
            for pointers in INDEX_POINTERS {
                let same: Vec<&MatrixCell> = cells
                    .iter()
                    .filter(|c| c.storage == storage && c.gc == gc && c.pointers == pointers)
                    .collect();
                let refused: Vec<&MatrixCell> = same
                    .iter()
                    .copied()
                    .filter(|c| c.verdict.is_err())
                    .collect();
                match refused.first() {
                    None => s.push_str(" ok |"),
                    Some(c) if refused.len() == same.len() => {
                        let m = c.verdict.as_ref().expect_err("refused");
                        s.push_str(&format!(" {} |", label(m)));
                    }
                    Some(_) => {
                        let names: Vec<&str> = refused.iter().map(|c| c.protocol.name()).collect();
                        s.push_str(&format!(" ok except {} |", names.join(", ")));
                    }
                }
            }
            s.push('\n');
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Where protocols disagree on a combination, the refusal names the
    /// protocol (so the folded table can say which).
    #[test]
    fn a_protocol_changes_a_verdict_only_by_naming_itself() {
        let cells = validity_matrix();
        assert_eq!(
            cells.len(),
            Protocol::ALL.len()
                * VersionStorage::ALL.len()
                * GcPolicy::ALL.len()
                * IndexPointers::ALL.len()
        );
        for c in &cells {
            let some_ok = cells.iter().any(|d| {
                d.storage == c.storage
                    && d.gc == c.gc
                    && d.pointers == c.pointers
                    && d.verdict.is_ok()
            });
            if let (true, Err(m)) = (some_ok, &c.verdict) {
                assert!(m.contains(&format!("protocol {}", c.protocol)), "{c:?}");
            }
        }
    }

    #[test]
    fn the_known_conflicts_are_refused_and_named() {
        let cells = validity_matrix();
        for c in &cells {
            if c.gc == GcPolicy::Cooperative && c.storage != VersionStorage::AppendOldToNew {
                let m = c.verdict.as_ref().unwrap_err();
                assert!(
                    m.contains("Cooperative") && m.contains("AppendOldToNew"),
                    "{m}"
                );
            }
            if c.pointers == IndexPointers::Physical && !c.storage.is_append_only() {
                assert!(c.verdict.is_err(), "{c:?}");
            }
            if c.storage == VersionStorage::Siro
                && c.gc != GcPolicy::DeadZone
                && c.gc != GcPolicy::Cooperative
                && c.pointers != IndexPointers::Physical
            {
                let m = c.verdict.as_ref().unwrap_err();
                assert!(m.contains("Siro") && m.contains("DeadZone"), "{m}");
            }
            if c.pointers == IndexPointers::LogicalTupleId
                && (c.gc != GcPolicy::Cooperative || c.storage == VersionStorage::AppendOldToNew)
                && (c.storage != VersionStorage::Siro || c.gc == GcPolicy::DeadZone)
                && !(c.protocol == Protocol::Occ && c.gc == GcPolicy::DeadZone)
            {
                assert!(c.verdict.is_ok(), "{c:?}");
            }
            if c.protocol == Protocol::Occ && c.gc == GcPolicy::DeadZone {
                assert!(c.verdict.is_err(), "{c:?}");
            }
        }
        let md = matrix_markdown();
        assert!(md.contains("| n2o | coop | no: COOP needs O2N |"), "{md}");
        assert!(md.contains("| o2n | coop | ok |"), "{md}");
        assert!(
            md.contains("| siro | dead-zone | ok except occ | ok except occ | no: physical"),
            "{md}"
        );
        assert!(md.contains("| n2o | dead-zone | ok except occ |"), "{md}");
        assert!(
            md.contains("| siro | vac | no: SIRO needs dead-zone GC |"),
            "{md}"
        );
    }
}
