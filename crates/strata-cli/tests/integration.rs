//! The integration tests of `strata-cli`, one module per file of this
//! folder, built as one test binary (each file was a binary of its own,
//! linking everything again; issue 40, item 15). A new test file is a new
//! line here (`autotests = false`).

#[path = "bench_tpcc.rs"]
mod bench_tpcc;
#[path = "check.rs"]
mod check;
#[path = "cli.rs"]
mod cli;
#[path = "explore.rs"]
mod explore;
#[path = "inspect.rs"]
mod inspect;
#[path = "presets.rs"]
mod presets;
#[path = "reproduce.rs"]
mod reproduce;
#[path = "reproduce_figures.rs"]
mod reproduce_figures;
#[path = "tpcc_ermia.rs"]
mod tpcc_ermia;
