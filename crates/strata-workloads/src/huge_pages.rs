//! Transparent huge pages around a benchmark's run phase.
//!
//! A benchmark touches memory in two ways: the load fills tables and
//! indexes that every transaction then reads (huge pages widen the TLB's
//! reach over them), and the run keeps faulting in memory it has never
//! touched (new versions, inserted rows, grown hash tables). With Linux's
//! transparent huge pages each such first touch faults in and zeroes a
//! whole 2 MiB page:
//!
//! ```text
//!  load ──────────────────────> run ─────────────────────────────>
//!  tables, indexes: huge pages  versions, inserts: 4 KiB pages (Load)
//!  (TLB reach over 1M rows)     (a fault zeroes 4 KiB, not 2 MiB)
//! ```
//!
//! On the 2-core development VM (docs/PERFORMANCE.md, 2026-11-27) the
//! zeroing of huge pages was 18-24% of TPC-C's run (`clear_page_erms`)
//! and under 2% with small pages: NewOrder + Payment ran 11-30% faster
//! with huge pages off for the run phase. Turning them off for the whole
//! process (`MIMALLOC_ALLOW_THP=0`) gained the same there but cost the
//! uniform YCSB update mix 5-6% (the loaded table's TLB misses); off for
//! the run alone cost it nothing on 2 threads, but 10% on 16 (a 16-core
//! machine: probably versions churning fast enough for their TLB misses to
//! show). So `bench tpcc`, whose tables grow with every NewOrder, runs
//! with [`HugePages::Load`] and `bench ycsb`, whose tables do not, with
//! the system's choice; a library caller gets the system's choice unless
//! it asks. CCBench's `tpcc_silo` ran the same with and without huge
//! pages, so the gain is Strata's allocator's, not the machine's.
//!
//! The switch is Linux's `prctl(PR_SET_THP_DISABLE)`: process-wide, so
//! the run phases open at one time share one switch ([`RunPhase`]
//! counts them), and pages already faulted in keep their size.

use crate::WorkloadError;
use serde::Serialize;
use std::sync::Mutex;

/// Which pages the process's fresh memory gets (`--huge-pages`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum HugePages {
    /// Whatever the operating system does (the default).
    #[default]
    Os,
    /// Huge pages while loading, none for memory first touched during the
    /// run (`bench tpcc`'s default on Linux).
    Load,
    /// None from the process's start (set by the caller before loading,
    /// with [`HugePages::apply_at_start`]).
    Off,
}

impl HugePages {
    /// [`HugePages::Load`] where this system can carry it out (Linux, with
    /// a kernel that answers `PR_GET_THP_DISABLE`: 3.15 and later), else
    /// [`HugePages::Os`]: the default for workloads whose tables grow
    /// during the run, which must not fail where the switch is missing.
    pub fn load_where_supported() -> Self {
        if disabled().is_some() {
            HugePages::Load
        } else {
            HugePages::Os
        }
    }

    /// Refuses a policy this operating system cannot carry out.
    pub fn check(self) -> Result<(), WorkloadError> {
        if self != HugePages::Os && !cfg!(target_os = "linux") {
            return Err(WorkloadError::Config(format!(
                "huge pages {self:?} needs Linux's PR_SET_THP_DISABLE; use os"
            )));
        }
        Ok(())
    }

    /// For [`HugePages::Off`], turns huge pages off now, before anything is
    /// loaded; the other policies do nothing here.
    pub fn apply_at_start(self) -> Result<(), WorkloadError> {
        self.check()?;
        if self == HugePages::Off {
            set_disabled(true)?;
        }
        Ok(())
    }
}

impl std::str::FromStr for HugePages {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "os" => Ok(HugePages::Os),
            "load" => Ok(HugePages::Load),
            "off" => Ok(HugePages::Off),
            _ => Err(format!("expected os, load or off, got {s:?}")),
        }
    }
}

/// Open run phases that turned huge pages off (the switch is the
/// process's, and tests run drivers side by side).
static OPEN_RUNS: Mutex<usize> = Mutex::new(0);

/// Huge pages off while it lives, under [`HugePages::Load`]; turned back
/// on when the last open run phase ends, so that a later load in the same
/// process (`bench --engine all`, `reproduce`) gets them again.
pub struct RunPhase {
    active: bool,
}

impl RunPhase {
    pub fn begin(policy: HugePages) -> Result<RunPhase, WorkloadError> {
        policy.check()?;
        if policy != HugePages::Load {
            return Ok(RunPhase { active: false });
        }
        let mut open = OPEN_RUNS.lock().unwrap_or_else(|e| e.into_inner());
        if *open == 0 {
            set_disabled(true)?;
        }
        *open += 1;
        Ok(RunPhase { active: true })
    }
}

impl Drop for RunPhase {
    fn drop(&mut self) {
        if !self.active {
            return;
        }
        let mut open = OPEN_RUNS.lock().unwrap_or_else(|e| e.into_inner());
        *open -= 1;
        if *open == 0 {
            // Nothing to report from a destructor: a failure leaves huge
            // pages off, which costs speed, never data.
            let _ = set_disabled(false);
        }
    }
}

/// Whether huge pages are off for this process now (Linux; `None` where
/// the question has no answer).
pub fn disabled() -> Option<bool> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: PR_GET_THP_DISABLE takes no pointer arguments and only
        // reads the calling process's flag.
        let r = unsafe { libc::prctl(libc::PR_GET_THP_DISABLE, 0, 0, 0, 0) };
        (r >= 0).then_some(r == 1)
    }
    #[cfg(not(target_os = "linux"))]
    {
        None
    }
}

fn set_disabled(off: bool) -> Result<(), WorkloadError> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: PR_SET_THP_DISABLE takes an integer flag and no pointers;
        // it changes only which page size later faults of this process get.
        let r = unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, off as libc::c_ulong, 0, 0, 0) };
        if r != 0 {
            return Err(WorkloadError::Engine(format!(
                "prctl(PR_SET_THP_DISABLE, {}) failed: {}",
                off as u8,
                std::io::Error::last_os_error()
            )));
        }
        Ok(())
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = off;
        Err(WorkloadError::Config(
            "huge-page control needs Linux's PR_SET_THP_DISABLE".into(),
        ))
    }
}
