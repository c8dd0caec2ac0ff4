//! Shuttle model check of SIRO's collaborative cleaning (vDriver §3.4,
//! Fig. 9) on the engine's own code (`storage/siro.rs`: `RowState`, the
//! per-row flag taken by test-and-set with footprints).
//!
//! Built with `--cfg strata_model` (see `src/sync/mod.rs`), so the flag is
//! shuttle's atomic. A writer (vSORTER) relocates twice, one write after
//! the other (its write lock keeps it the row's only writer); the row's
//! collector cuts once (vCUTTER, racing the first or second write) and
//! then runs the row step. The invariants: one party at a time inside the
//! row (the ghost `inside` counter), the cut is done exactly once, by
//! whoever won (the cutter, or the writer it handed the cut to), before
//! the row step gets the row, and both relocations happen.
//! `a_writer_dropping_the_handed_over_cut_is_caught` shows the model fails
//! when the winning writer frees the row without doing the cut.
#![cfg(strata_model)]

use shuttle::sync::atomic::AtomicUsize;
use shuttle::sync::Arc;
use shuttle::thread;
use std::sync::atomic::Ordering::SeqCst;
use strata::model::{caught, Break, CutEvent, CutterTas, DeadZones, Handover, RowState};

struct Ghost {
    row: RowState,
    /// Parties inside the row now.
    inside: AtomicUsize,
    cuts: AtomicUsize,
    relocations: AtomicUsize,
}

impl Ghost {
    fn step(&self, what: &AtomicUsize) {
        assert_eq!(self.inside.fetch_add(1, SeqCst), 0, "two parties inside");
        what.fetch_add(1, SeqCst);
        self.inside.fetch_sub(1, SeqCst);
    }
}

fn model() {
    let g = Arc::new(Ghost {
        row: RowState::default(),
        inside: AtomicUsize::new(0),
        cuts: AtomicUsize::new(0),
        relocations: AtomicUsize::new(0),
    });
    let writer = {
        let g = Arc::clone(&g);
        thread::spawn(move || {
            for _ in 0..2 {
                g.row.sorter_enter();
                g.step(&g.relocations);
                if let Some(h) = g.row.sorter_release() {
                    assert_eq!(h.victims, [64], "the cutter's own cut");
                    g.step(&g.cuts);
                    g.row.sorter_done();
                }
            }
        })
    };
    let collector = {
        let g = Arc::clone(&g);
        thread::spawn(move || {
            let h = Box::new(Handover {
                victims: vec![64],
                event: CutEvent::CutI,
                zones: std::sync::Arc::new(DeadZones::new(Vec::new(), 100)),
            });
            match g.row.cutter_tas(h) {
                CutterTas::Won(_) => {
                    g.step(&g.cuts);
                    g.row.cutter_release();
                }
                CutterTas::HandedOver => {}
            }
            g.row.cleaner_enter();
            assert_eq!(
                g.cuts.load(SeqCst),
                1,
                "the cut is done before the row step"
            );
            g.step(&AtomicUsize::new(0));
            g.row.cleaner_release();
        })
    };
    writer.join().unwrap();
    collector.join().unwrap();
    assert_eq!(g.cuts.load(SeqCst), 1);
    assert_eq!(g.relocations.load(SeqCst), 2);
    // The row is free again.
    assert!(!g.row.sorter_enter());
    assert!(g.row.sorter_release().is_none());
}

#[test]
fn collaborative_cleaning_cuts_once_by_the_winner() {
    shuttle::check_random(model, 3000);
    shuttle::check_pct(model, 3000, 3);
}

#[test]
fn a_writer_dropping_the_handed_over_cut_is_caught() {
    assert!(
        caught(Break::CutHandoverDropped, || shuttle::check_random(
            model, 3000
        )),
        "the model must see the lost cut"
    );
}
