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
    let names: Vec<&str> = strata::Protocol::ALL.iter().map(|p| p.name()).collect();
    println!(
        "Verdicts for every protocol ({}); \"ok except P\" cells are refused for P only.\n",
        names.join(", ")
    );
    print!("{}", strata::matrix::matrix_markdown());
}

/// `--preset NAME` of `bench ycsb`: the preset's protocol, storage, GC and
/// index pointers, except where a flag was given on the command line
/// (`explicit(id)`): an explicit flag overrides the preset. Returns one
/// note per override, for the run's header.
pub fn apply(a: &mut crate::YcsbArgs, explicit: &dyn Fn(&str) -> bool) -> Vec<String> {
    let Some(p) = a.preset else {
        return Vec::new();
    };
    let o = strata::Options::preset(p);
    let mut notes = Vec::new();
    let mut take = |id: &str, flag: String, preset: String| {
        if explicit(id) {
            if flag != preset {
                notes.push(format!(
                    "--{id} {flag} overrides preset {}'s {preset}",
                    p.name()
                ));
            }
            false
        } else {
            true
        }
    };
    if take(
        "protocol",
        a.protocol.name().into(),
        o.protocol.name().into(),
    ) {
        a.protocol = o.protocol;
    }
    if take(
        "storage",
        a.storage.name().into(),
        o.version_storage.name().into(),
    ) {
        a.storage = o.version_storage;
    }
    if take("gc", a.gc.name().into(), o.gc.name().into()) {
        a.gc = o.gc;
    }
    let (ours, theirs) = (
        pointers_name(a.index_pointers),
        pointers_name(o.index_pointers),
    );
    if take("index-pointers", ours.into(), theirs.into()) {
        a.index_pointers = o.index_pointers;
    }
    // (A flag that can only turn blind overwrites off: nothing to override.)
    if !o.ssn_blind_writes {
        a.extra.no_blind_writes = true;
    }
    notes
}
