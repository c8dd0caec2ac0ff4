//! The HTAP mix of MV-PBT's Figure 3 (Riegger et al., §2): OLTP clients
//! run YCSB A and E together while an analytical reader, holding one old
//! snapshot, scans a range of the secondary index over and over and, every
//! few seconds, looks up one row whose chain has grown under it.
//!
//! ```text
//!  load usertable (ycsb_core), index on sk of the chosen kind
//!  analytical thread: open snapshot S ─────────────────────────────────┐
//!  main: update the analysed rows [0, scan_rows) chain_length-1 times  │
//!        (a text field: no key changes), so S meets chains of          │
//!        chain_length versions there                                   │
//!  measured window:                                                    │
//!    OLTP clients   A+E mix (25% read, 25% update, 2% insert, 48% scan)│
//!                   over keys [scan_rows, ..): the chains S scans keep │
//!                   exactly chain_length versions                      │
//!    analytical     in S: covering scan of sk in [0, scan_rows)  ◄─────┘
//!                   (index columns + primary key), again and again;
//!                   every point_every: index lookup of row 0 (full row)
//! ```
//!
//! The covering scan is where the index kinds differ: today's index
//! resolves every entry to its row and walks the chain back to S's
//! version; MV-PBT decides visibility from its records alone (§5.4) and
//! reads no row. The point query reads the full row in both, so both walk
//! its chain. S stays open for the whole run, so the OLTP rows' versions
//! pile up too, as under a real analytical query.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde::Serialize;
use strata::{Database, Value};

use crate::driver::{self, DriverConfig, Observer, Report};
use crate::ycsb_core::{self, CoreConfig, TYPES};
use crate::WorkloadError;

/// YCSB A and E combined: percent of reads, updates, inserts and scans.
pub const MIX: [u32; 4] = [25, 25, 2, 48];

/// Sizes of a run (the OLTP side is `core`; its `workload` is ignored).
#[derive(Debug, Clone, Serialize)]
pub struct HtapConfig {
    pub core: CoreConfig,
    /// Versions each analysed row has when the measured window starts.
    pub chain_length: u64,
    /// Rows of the analytical range scan (keys `0..scan_rows`).
    pub scan_rows: u64,
    /// Interval of the analytical reader's point query.
    pub point_every: Duration,
}

impl Default for HtapConfig {
    fn default() -> Self {
        HtapConfig {
            core: CoreConfig::default(),
            chain_length: 50,
            scan_rows: 1_000,
            point_every: Duration::from_secs(1),
        }
    }
}

impl HtapConfig {
    /// Refuses out-of-range settings with a message naming the flag.
    pub fn validate(&self) -> Result<(), WorkloadError> {
        self.core.validate()?;
        let bad = |m: String| Err(WorkloadError::Config(m));
        if self.chain_length == 0 || self.chain_length > 1_000 {
            return bad(format!(
                "--chain-length must be in 1..=1000, got {}",
                self.chain_length
            ));
        }
        if self.scan_rows == 0 || self.scan_rows > self.core.records / 2 {
            return bad(format!(
                "--scan-rows must be in 1..=records/2 ({}), got {}",
                self.core.records / 2,
                self.scan_rows
            ));
        }
        if self.point_every.is_zero() {
            return bad("--point-every must be above 0".into());
        }
        Ok(())
    }
}

/// What the analytical reader measured.
#[derive(Debug, Clone, Serialize)]
pub struct Analytical {
    pub scans: u64,
    pub scans_per_s: f64,
    /// Median time of one covering scan.
    pub scan_ms_p50: f64,
    pub point_queries: u64,
    /// Median time of one point query.
    pub point_query_us_p50: f64,
}

/// What a run measured.
#[derive(Debug, Clone, Serialize)]
pub struct HtapReport {
    pub config: HtapConfig,
    pub load_s: f64,
    /// The OLTP clients (types read, update, insert, scan).
    pub oltp: Report,
    pub analytical: Analytical,
}

/// Loads, grows the analysed rows' chains under the analytical snapshot,
/// and runs both sides for the measured window.
pub fn run(
    db: &Database,
    cfg: &HtapConfig,
    observer: &mut dyn Observer,
) -> Result<HtapReport, WorkloadError> {
    cfg.validate()?;
    let started = Instant::now();
    let t = ycsb_core::load(db, &cfg.core, observer)?;
    let load_s = started.elapsed().as_secs_f64();
    let stop_flag = AtomicBool::new(false);
    let stop = &stop_flag;
    let (opened_tx, opened_rx) = mpsc::channel::<Result<(), String>>();
    let (go_tx, go_rx) = mpsc::channel::<bool>();
    let (table, index) = (&t.table, &t.index);
    let rows = cfg.scan_rows;
    std::thread::scope(|s| {
        let analytical = s.spawn(move || -> Result<Analytical, WorkloadError> {
            let mut snap = match db.begin_read_only() {
                Ok(snap) => {
                    let _ = opened_tx.send(Ok(()));
                    snap
                }
                Err(e) => {
                    let _ = opened_tx.send(Err(e.to_string()));
                    return Err(e.into());
                }
            };
            if !go_rx.recv().unwrap_or(false) {
                return Ok(median_report(Vec::new(), Vec::new(), 0.0));
            }
            let lo = strata::key![0];
            let hi = strata::key![rows as i64];
            let hot = strata::key![0];
            let loaded = ycsb_core::loaded_text(&cfg.core, 0, 0);
            let warm_until = Instant::now() + cfg.core.warmup;
            let (mut scans, mut points) = (Vec::new(), Vec::new());
            let mut next_point = warm_until;
            let mut window = None;
            while !stop.load(Ordering::Relaxed) {
                let now = Instant::now();
                let measuring = now >= warm_until;
                if measuring && window.is_none() {
                    window = Some(now);
                }
                if measuring && now >= next_point {
                    let at = Instant::now();
                    let found = snap.index_get(index, &hot)?;
                    if found.len() != 1 || found[0][2] != loaded {
                        return Err(WorkloadError::Inconsistent(
                            "the analytical snapshot lost its version of row 0".into(),
                        ));
                    }
                    points.push(at.elapsed().as_secs_f64() * 1e6);
                    next_point = at + cfg.point_every;
                }
                let at = Instant::now();
                let n = snap.index_scan_keys(index, lo.clone()..hi.clone())?.len() as u64;
                if n != rows {
                    return Err(WorkloadError::Inconsistent(format!(
                        "the analytical scan found {n} rows of {rows}"
                    )));
                }
                if measuring {
                    scans.push(at.elapsed().as_secs_f64() * 1e3);
                }
            }
            let secs = window.map_or(0.0, |w| w.elapsed().as_secs_f64());
            Ok(median_report(scans, points, secs))
        });
        let grown = opened_rx
            .recv()
            .map_err(|_| WorkloadError::Config("the analytical thread ended early".into()))
            .and_then(|r| r.map_err(WorkloadError::Config))
            .and_then(|()| grow_chains(db, table, cfg, observer));
        let _ = go_tx.send(grown.is_ok());
        let oltp = grown.and_then(|()| {
            let driver_cfg = DriverConfig {
                warmup: cfg.core.warmup,
                duration: cfg.core.duration,
                series: false,
                huge_pages: Default::default(),
                ab_interval: None,
            };
            let workers = ycsb_core::clients(db, &t, &cfg.core, MIX, rows);
            driver::run(&driver_cfg, &TYPES, workers, observer)
        });
        stop.store(true, Ordering::Relaxed);
        let analytical = analytical
            .join()
            .map_err(|_| WorkloadError::Config("the analytical thread panicked".into()))?;
        Ok(HtapReport {
            config: cfg.clone(),
            load_s,
            oltp: oltp?,
            analytical: analytical?,
        })
    })
}

fn median_report(mut scans: Vec<f64>, mut points: Vec<f64>, secs: f64) -> Analytical {
    Analytical {
        scans: scans.len() as u64,
        scans_per_s: if secs > 0.0 {
            scans.len() as f64 / secs
        } else {
            0.0
        },
        scan_ms_p50: crate::driver::quantile(&mut scans, 0.5),
        point_queries: points.len() as u64,
        point_query_us_p50: crate::driver::quantile(&mut points, 0.5),
    }
}

/// Updates field `f0` of rows `0..scan_rows` `chain_length - 1` times.
fn grow_chains(
    db: &Database,
    table: &strata::Table,
    cfg: &HtapConfig,
    observer: &mut dyn Observer,
) -> Result<(), WorkloadError> {
    let rounds = cfg.chain_length - 1;
    observer.start("versions", rounds * cfg.scan_rows, "updates");
    for round in 0..rounds {
        let text = Value::from(format!("{round:0width$}", width = cfg.core.field_bytes));
        let mut k = 0;
        while k < cfg.scan_rows {
            let end = (k + 1000).min(cfg.scan_rows);
            let mut txn = db.begin()?;
            for key in k..end {
                txn.update(table, &strata::key![key as i64], &[(2, text.clone())])?;
            }
            txn.commit()?;
            k = end;
            observer.set(round * cfg.scan_rows + k);
        }
    }
    observer.finish();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::Quiet;
    use strata::{IndexKind, Options};

    fn small(index: IndexKind, chain_length: u64) -> HtapConfig {
        HtapConfig {
            core: CoreConfig {
                records: 4_000,
                fields: 3,
                field_bytes: 20,
                index,
                warmup: Duration::ZERO,
                duration: Duration::from_millis(300),
                ..CoreConfig::default()
            },
            chain_length,
            scan_rows: 500,
            point_every: Duration::from_millis(50),
        }
    }

    /// Both sides run on both index kinds: the OLTP clients commit every
    /// operation type of the A+E mix, and the analytical reader's scans
    /// and point queries, checked against its snapshot inside the run,
    /// complete.
    #[test]
    fn both_sides_run_on_both_index_kinds() {
        for index in IndexKind::ALL {
            let db = Database::open(Options::default()).unwrap();
            let r = run(&db, &small(index, 5), &mut Quiet).unwrap();
            for ty in ["read", "update", "scan"] {
                let c = r.oltp.of_type(ty).map_or(0, |t| t.committed);
                assert!(c > 0, "{index:?}: {ty}");
            }
            assert!(r.analytical.scans > 0, "{index:?}: {:?}", r.analytical);
            assert!(r.analytical.point_queries > 0, "{index:?}");
            assert!(r.analytical.scan_ms_p50 > 0.0);
        }
    }

    /// The analysed rows' chains have the asked length when the window
    /// opens: a snapshot taken then reads the last round's text, and one
    /// taken before the growth reads the loaded text.
    #[test]
    fn the_analysed_rows_get_chain_length_versions() {
        let db = Database::open(Options::default()).unwrap();
        let cfg = small(IndexKind::MvPbt, 4);
        let t = ycsb_core::load(&db, &cfg.core, &mut Quiet).unwrap();
        let mut before = db.begin_read_only().unwrap();
        grow_chains(&db, &t.table, &cfg, &mut Quiet).unwrap();
        let mut after = db.begin_read_only().unwrap();
        let last = Value::from(format!("{:020}", 2));
        let (old, new) = (
            before.get(&t.table, &strata::key![7]).unwrap().unwrap(),
            after.get(&t.table, &strata::key![7]).unwrap().unwrap(),
        );
        assert_eq!(new[2], last);
        assert_ne!(old[2], last);
        assert_eq!(old[2], ycsb_core::loaded_text(&cfg.core, 7, 0));
        let untouched = after.get(&t.table, &strata::key![600]).unwrap().unwrap();
        assert_ne!(untouched[2], last, "only the analysed rows grow");
        assert!(small(IndexKind::MvPbt, 0).validate().is_err());
        let mut big = small(IndexKind::MvPbt, 2);
        big.scan_rows = 3_000;
        assert!(big
            .validate()
            .unwrap_err()
            .to_string()
            .contains("--scan-rows"));
    }
}
