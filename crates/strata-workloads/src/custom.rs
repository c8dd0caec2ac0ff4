//! TEMPORARY STUB (not committed): replaced by the helper's module.
use crate::driver::{DriverConfig, Observer};
use crate::WorkloadError;
use std::path::Path;
#[derive(Debug, Clone)]
pub struct CustomWorkload;
impl CustomWorkload {
    pub fn from_path(_p: &Path) -> Result<Self, WorkloadError> {
        Err(WorkloadError::NotImplemented("stub".into()))
    }
    pub fn name(&self) -> &str {
        ""
    }
    pub fn has_secondary_indexes(&self) -> bool {
        false
    }
    pub fn rows(&self) -> u64 {
        0
    }
}
pub struct CustomRun {
    pub threads: usize,
    pub seed: u64,
    pub index_kind: strata::IndexKind,
}
pub fn run(
    _db: strata::Database,
    _w: &CustomWorkload,
    _r: &CustomRun,
    _d: &DriverConfig,
    _o: &mut dyn Observer,
) -> Result<crate::ycsb::YcsbReport, WorkloadError> {
    Err(WorkloadError::NotImplemented("stub".into()))
}
