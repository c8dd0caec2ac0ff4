//! `strata presets`, `strata matrix` and `bench ycsb --preset`, and the
//! README tables they must match (so code and docs cannot drift).

use crate::cli::{strata, text};

/// The text of docs/DESIGN-SPACE.md (where the README's design-space
/// sections live) between `<!-- NAME:begin -->` and `<!-- NAME:end -->`.
fn readme_section(name: &str) -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/DESIGN-SPACE.md");
    let readme = std::fs::read_to_string(path).expect("docs/DESIGN-SPACE.md");
    let begin = format!("<!-- {name}:begin -->\n");
    let end = format!("<!-- {name}:end -->");
    let a = readme.find(&begin).expect("begin marker") + begin.len();
    let b = readme[a..].find(&end).expect("end marker") + a;
    readme[a..b].to_string()
}

#[test]
fn readme_matrix_is_the_code_matrix() {
    assert_eq!(
        readme_section("matrix"),
        strata::matrix::matrix_markdown(),
        "docs/DESIGN-SPACE.md's validity matrix is stale: paste `strata matrix`'s table"
    );
    let out = strata(&["matrix"]);
    assert!(out.status.success());
    assert!(text(&out.stdout).contains(&strata::matrix::matrix_markdown()));
}

#[test]
fn readme_presets_are_the_code_presets() {
    assert_eq!(
        readme_section("presets"),
        strata::presets_markdown(),
        "docs/DESIGN-SPACE.md's preset table is stale: paste strata::presets_markdown()"
    );
}

#[test]
fn presets_lists_every_preset_and_its_mapping() {
    let out = strata(&["presets"]);
    assert!(out.status.success());
    let s = text(&out.stdout);
    for p in strata::Preset::ALL {
        assert!(s.contains(p.name()), "{p}: {s}");
    }
    assert!(s.contains("hybrid GC -> transaction-level"), "{s}");
    assert!(
        s.contains("hekaton   protocol mvocc storage o2n         gc coop"),
        "{s}"
    );
}

#[test]
fn bench_ycsb_takes_a_preset_and_tuple_level_gc() {
    for args in [
        &["--preset", "hekaton"][..],
        &["--gc", "vac", "--gc-threads", "2", "--storage", "delta"][..],
    ] {
        let mut a = vec![
            "bench",
            "ycsb",
            "--records",
            "500",
            "--threads",
            "2",
            "--duration",
            "0.3",
            "--warmup",
            "0",
            "--read-ratio",
            "0.2",
            "--columns",
            "2",
        ];
        a.extend_from_slice(args);
        let out = strata(&a);
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
        let s = text(&out.stdout);
        let want = if args[0] == "--preset" {
            "gc coop"
        } else {
            "gc vac"
        };
        assert!(s.contains(want), "{args:?}: {s}");
    }
    let out = strata(&["bench", "ycsb", "--preset", "sybase"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("unknown preset"));
    let out = strata(&["bench", "ycsb", "--gc", "coop", "--records", "10"]);
    assert_eq!(out.status.code(), Some(2), "COOP on N2O is refused");
    assert!(text(&out.stderr).contains("Cooperative"));
}
