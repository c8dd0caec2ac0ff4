//! `explore --study`: the grid behind the Peloton study's conclusions (Wu
//! et al., VLDB 2017, §8) at the quick scale, and the map it draws set
//! beside each conclusion, computed from the run (never written by hand).
//!
//! ```text
//!   read-ratio 0.8 (read-intensive) | 0.2 (update-intensive)      (§7: 80/20, 20/80)
//! × theta      0.2 (low contention) | 0.8 (high contention)       (§7: θ = 0.2, 0.8)
//! × ro-threads 0 | 1 (a long reader: 1,000 reads per transaction)  (§7.2, Figs. 8-9)
//!   over the study's protocols (MVTO, MVOCC, MV2PL, SI+SSN), storages
//!   (O2N, N2O, time-travel, delta) and collectors (txn, VAC, COOP)
//! ```

use strata::{GcPolicy, IndexPointers, Protocol, VersionStorage};

use super::report::CellResult;
use super::space::{Design, Narrow};
use super::workload::{Kind, Workload};

/// Sets the study's workload, grid and design space (dimensions the user
/// narrowed stay as given).
pub fn configure(w: &mut Workload, grid: &mut Vec<(String, Vec<f64>)>, n: &mut Narrow) {
    w.kind = Kind::Ycsb;
    w.file = None;
    w.ycsb.ops_per_txn = 10;
    grid.clear();
    grid.push(("read-ratio".into(), vec![0.8, 0.2]));
    grid.push(("theta".into(), vec![0.2, 0.8]));
    grid.push(("ro-threads".into(), vec![0.0, 1.0]));
    if n.protocols.is_empty() {
        n.protocols = vec![
            Protocol::Mvto,
            Protocol::Mvocc,
            Protocol::Mv2pl,
            Protocol::SiSsn,
        ];
    }
    if n.storages.is_empty() {
        n.storages = vec![
            VersionStorage::AppendOldToNew,
            VersionStorage::AppendNewToOld,
            VersionStorage::TimeTravel,
            VersionStorage::Delta,
        ];
    }
    if n.gcs.is_empty() {
        n.gcs = vec![
            GcPolicy::TransactionLevel,
            GcPolicy::Vacuum,
            GcPolicy::Cooperative,
        ];
    }
    if n.pointers.is_empty() {
        n.pointers = vec![IndexPointers::LogicalTupleId];
    }
}

/// What fraction of the cells a predicate holds in, as `k of n`.
fn count(results: &[CellResult], f: impl Fn(&CellResult) -> bool) -> String {
    let k = results.iter().filter(|r| f(r)).count();
    format!("{k} of {}", results.len())
}

fn winners(r: &CellResult) -> impl Iterator<Item = &Design> {
    r.outcome.winners.iter().map(|&p| &r.designs[p])
}

fn best(r: &CellResult) -> Option<&Design> {
    r.outcome.ranked.first().map(|&p| &r.designs[p])
}

/// The cells' winners per dimension value, `value: k` for `f` of the best.
fn tally(results: &[CellResult], f: impl Fn(&Design) -> String) -> String {
    let mut m: std::collections::BTreeMap<String, usize> = Default::default();
    for r in results {
        if let Some(d) = best(r) {
            *m.entry(f(d)).or_default() += 1;
        }
    }
    let mut v: Vec<(String, usize)> = m.into_iter().collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    v.iter()
        .map(|(k, n)| format!("{k} {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The fewest bytes per row any design with collector `gc` measured in a
/// cell (its last round's median), if one ran.
fn bytes_with(r: &CellResult, gc: GcPolicy) -> Option<f64> {
    (0..r.designs.len())
        .filter(|&p| r.designs[p].gc == gc && !r.outcome.points[p].trials.is_empty())
        .map(|p| r.outcome.points[p].median_of(|t| t.bytes_per_row))
        .min_by(f64::total_cmp)
}

/// The best median throughput of a cell.
fn best_rate(r: &CellResult) -> Option<f64> {
    (r.outcome.ranked.first()).map(|&p| r.outcome.points[p].median_of(|t| t.committed_per_s))
}

/// Each §8 conclusion, the paper's words, and what this map shows.
pub fn findings(results: &[CellResult]) -> String {
    if results.is_empty() {
        return "No cell ran.\n".into();
    }
    let mut s = String::new();
    let mut line = |claim: &str, shows: String| {
        s.push_str(&format!("- **Paper:** {claim}\n  **This map:** {shows}\n"));
    };
    // 1. Storage matters most: do the winner sets agree on storage more
    // often than on protocol?
    let same = |f: &dyn Fn(&Design) -> String| {
        count(results, |r| {
            let mut v: Vec<String> = winners(r).map(f).collect();
            v.dedup();
            v.len() == 1
        })
    };
    line(
        "\"the version storage scheme is one of the most important components to scaling an \
         in-memory MVCC DBMS\" (§8)",
        format!(
            "best storage per cell: {}; best protocol per cell: {}. The winner set agrees on \
             storage in {} cells and on protocol in {} cells (a dimension the winners agree \
             on is one that decides).",
            tally(results, |d| d.storage.to_string()),
            tally(results, |d| d.protocol.name().to_string()),
            same(&|d| d.storage.to_string()),
            same(&|d| d.protocol.name().to_string()),
        ),
    );
    line(
        "\"MVTO works well on a variety of workloads\" (§8)",
        format!(
            "an MVTO design is in the winner set in {}, and among the finalists in {} cells.",
            count(results, |r| winners(r)
                .any(|d| d.protocol == Protocol::Mvto)),
            count(results, |r| r
                .outcome
                .ranked
                .iter()
                .any(|&p| r.designs[p].protocol == Protocol::Mvto)),
        ),
    );
    let smaller = results
        .iter()
        .filter_map(|r| {
            Some((
                bytes_with(r, GcPolicy::TransactionLevel)?,
                bytes_with(r, GcPolicy::Vacuum)?,
            ))
        })
        .collect::<Vec<_>>();
    line(
        "\"a transaction-level GC provided the best performance with the smallest memory \
         footprint\" (§8)",
        format!(
            "best collector per cell: {}; the leanest transaction-level design used fewer \
             bytes per row than the leanest VAC design in {} of {} cells.",
            tally(results, |d| d.gc.to_string()),
            smaller.iter().filter(|(t, v)| t <= v).count(),
            smaller.len(),
        ),
    );
    line(
        "\"the logical pointer scheme always achieve[s] a higher throughput\" with many \
         secondary indexes (§8)",
        "not in this grid (no secondary indexes); run `strata explore --secondary-indexes 4 \
         --grid read-ratio=0.8,0.2` to map it."
            .into(),
    );
    // Each cell with a long reader beside the same cell without one.
    let pairs: Vec<String> = results
        .iter()
        .filter(|r| r.workload.ycsb.ro_threads > 0)
        .filter_map(|r| {
            let y = &r.workload.ycsb;
            let base = results.iter().find(|b| {
                b.workload.ycsb.ro_threads == 0
                    && b.workload.ycsb.read_ratio == y.read_ratio
                    && b.workload.ycsb.theta == y.theta
            })?;
            let (with, without) = (best_rate(r)?, best_rate(base)?);
            Some(format!(
                "read-ratio {} θ {}: best {} → {} ({:+.0}%)",
                y.read_ratio,
                y.theta,
                best(base).map_or("none".into(), |d| d.label()),
                best(r).map_or("none".into(), |d| d.label()),
                100.0 * (with / without - 1.0)
            ))
        })
        .collect();
    line(
        "\"the DBMS's performance drops in the presence of long-running transactions\" (§4)",
        format!(
            "the mix's best throughput, without and with a long reader (which also takes a \
             core of this machine's {}): {}.",
            std::thread::available_parallelism().map_or(1, |n| n.get()),
            pairs.join("; ")
        ),
    );
    s
}
