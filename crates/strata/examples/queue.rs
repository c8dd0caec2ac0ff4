//! A work queue through the public API, the pattern that used to fall off
//! a cliff: each transaction appends a job at the tail and takes the
//! oldest one off the head (`scan_limit(.., 1)`, then `delete`). The head
//! moves right through the primary index's B+-tree forever, so every
//! leaf it leaves behind is emptied; the tree takes emptied leaves (and
//! ancestors left without keys) out, so the first-row scan stays short.
//! Prints pops/s per 50,000 pops: flat means no trail of empty leaves.
//!
//! ```text
//! cargo run --release -p strata --example queue [pops]     (default 400000)
//! ```
//!
//! Measured on the 2-core development VM (2026-11-28): 400,000 pops
//! before the tree unlinked empty leaves: 77,850 pops/s for the first
//! 50,000, 1,988 for the last; after: 276-287K throughout.

use std::time::Instant;
use strata::{key, row, Database, Options, Schema, Type, Value};

fn main() -> strata::Result<()> {
    let pops: u64 = std::env::args()
        .nth(1)
        .map(|s| s.parse().expect("pops: a number"))
        .unwrap_or(400_000);
    let db = Database::open(Options::default())?;
    let jobs = db.create_table(
        Schema::new("jobs")
            .column("id", Type::Int)
            .column("payload", Type::Int)
            .primary_key(&["id"]),
    )?;
    let mut next = 0i64;
    // A backlog of 1,000 jobs.
    for _ in 0..1_000 {
        db.run(|t| t.insert(&jobs, row![next, 0]))?;
        next += 1;
    }
    let mut lap = Instant::now();
    for i in 1..=pops {
        db.run(|t| {
            t.insert(&jobs, row![next, i as i64])?;
            let head = t.scan_limit(&jobs, .., 1)?;
            let Value::Int(id) = head[0][0] else {
                unreachable!("ids are integers")
            };
            t.delete(&jobs, &key![id])
        })?;
        next += 1;
        if i % 50_000 == 0 {
            let rate = 50_000.0 / lap.elapsed().as_secs_f64();
            println!("{i:>9} pops: {rate:>9.0} pops/s");
            lap = Instant::now();
        }
    }
    Ok(())
}
