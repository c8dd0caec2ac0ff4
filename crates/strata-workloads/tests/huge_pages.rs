//! The huge-page switch is process-wide, so its test has a process of its
//! own: no other test's run phase can flip it under these assertions.
#![cfg(target_os = "linux")]

use strata_workloads::huge_pages::{disabled, HugePages, RunPhase};

#[test]
fn a_run_phase_turns_huge_pages_off_and_the_last_one_back_on() {
    let outer = RunPhase::begin(HugePages::Load).unwrap();
    assert_eq!(disabled(), Some(true));
    let inner = RunPhase::begin(HugePages::Load).unwrap();
    drop(outer);
    assert_eq!(disabled(), Some(true), "a run phase is still open");
    drop(inner);
    assert_eq!(disabled(), Some(false), "the last one turns them on");
    let os = RunPhase::begin(HugePages::Os).unwrap();
    assert_eq!(disabled(), Some(false), "os leaves the switch alone");
    drop(os);
    HugePages::Off.apply_at_start().unwrap();
    assert_eq!(disabled(), Some(true), "off turns them off before a load");
}

#[test]
fn policies_parse_by_name() {
    assert_eq!("load".parse::<HugePages>(), Ok(HugePages::Load));
    assert_eq!("off".parse::<HugePages>(), Ok(HugePages::Off));
    assert_eq!("os".parse::<HugePages>(), Ok(HugePages::Os));
    assert!("on"
        .parse::<HugePages>()
        .unwrap_err()
        .contains("os, load or off"));
    assert_eq!(HugePages::default(), HugePages::Os, "a library caller's");
    assert_eq!(HugePages::load_where_supported(), HugePages::Load);
}
