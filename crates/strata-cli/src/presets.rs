//! `strata presets` and `strata matrix`: the named configurations (Table 1
//! of the Peloton study, and ERMIA) and the validity matrix, both computed
//! by the engine (`strata::Preset`, `strata::matrix`), so what is printed
//! is what `Options::preset` and `Options::validate` do.

use strata::matrix::pointers_name;
use strata::Preset;

/// Prints every preset: its source row, Strata's options, and every
/// substitution made where Strata lacks a dimension.
pub fn print_presets() {
    for p in Preset::ALL {
        let i = p.info();
        let o = &i.options;
        println!(
            "{:<9} protocol {:<5} storage {:<11} gc {:<4} pointers {}",
            p.name(),
            o.protocol.name(),
            o.version_storage.name(),
            o.gc.name(),
            pointers_name(o.index_pointers)
        );
        println!("          source: {}", i.paper);
        for n in &i.notes {
            println!("          mapped: {n}");
        }
    }
}

/// Prints the validity matrix as the Markdown table README shows.
pub fn print_matrix() {
    println!("Every protocol (mvto, mvocc, mv2pl, si, ssn, ssi) has the same verdicts.\n");
    print!("{}", strata::matrix::matrix_markdown());
}

/// `--preset NAME` of `bench ycsb`: the preset's protocol, storage and GC
/// replace the flags'.
pub fn apply(a: &mut crate::YcsbArgs) {
    if let Some(p) = a.preset {
        let o = strata::Options::preset(p);
        a.protocol = o.protocol;
        a.storage = o.version_storage;
        a.gc = o.gc;
    }
}
