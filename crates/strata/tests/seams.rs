//! The design-dimension seams stay seams: no wildcard arm (`_ =>`) and no
//! `matches!` on a design-dimension enum anywhere in the engine.
//!
//! A variant added to `Protocol`, `VersionStorage`, `GcPolicy`,
//! `IndexPointers` or `IndexKind` (per index) must make the compiler point at every place that decides
//! on that dimension; a `_ =>` arm (or `matches!`, which hides one) would
//! silently give the new variant some other variant's behaviour. Clippy's
//! `wildcard_enum_match_arm` cannot be scoped to five enums, so this test
//! reads the engine's sources instead (comments stripped).
//!
//! The engine's top-level modules also stay layered: each imports only
//! modules of lower layers ([`LAYERS`], the order `docs/ARCHITECTURE.md`
//! draws), so they import each other without cycles.

use std::path::{Path, PathBuf};

const ENUMS: [&str; 5] = [
    "Protocol::",
    "VersionStorage::",
    "GcPolicy::",
    "IndexPointers::",
    "IndexKind::",
];

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

fn strip_comments(text: &str) -> String {
    text.lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The body of the `{...}` block starting at byte `open` (which is `{`).
fn block(text: &str, open: usize) -> &str {
    let mut depth = 0;
    for (i, c) in text[open..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return &text[open + 1..open + i];
                }
            }
            _ => {}
        }
    }
    &text[open + 1..]
}

/// The arms' patterns at the top level of a match body: the text before
/// each `=>` at nesting depth 0.
fn arm_patterns(body: &str) -> Vec<String> {
    let mut pats = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    let b = body.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'{' | b'(' | b'[' => depth += 1,
            b'}' | b')' | b']' => {
                depth -= 1;
                if depth == 0 && b[i] == b'}' {
                    start = i + 1; // a block arm ended
                }
            }
            b',' if depth == 0 => start = i + 1,
            b'=' if depth == 0 && b.get(i + 1) == Some(&b'>') => {
                pats.push(body[start..i].trim().to_string());
                i += 1;
            }
            _ => {}
        }
        i += 1;
    }
    pats
}

/// Violations in one file's text: (line, what).
fn violations(text: &str) -> Vec<(usize, String)> {
    let text = strip_comments(text);
    let line_of = |pos: usize| text[..pos].matches('\n').count() + 1;
    let mut out = Vec::new();
    for (pos, _) in text.match_indices("match ") {
        let Some(open) = text[pos..].find('{').map(|o| pos + o) else {
            continue;
        };
        let pats = arm_patterns(block(&text, open));
        let on_enum = pats.iter().any(|p| ENUMS.iter().any(|e| p.contains(e)));
        if on_enum {
            for p in &pats {
                let bare = p.split(" if ").next().unwrap_or(p).trim();
                if bare == "_" || bare.split('|').any(|alt| alt.trim() == "_") {
                    out.push((line_of(pos), format!("wildcard arm `{p} =>`")));
                }
            }
        }
    }
    for (pos, _) in text.match_indices("matches!(") {
        let args = &text[pos..text[pos..].find(')').map_or(text.len(), |e| pos + e)];
        if ENUMS.iter().any(|e| args.contains(e)) {
            out.push((line_of(pos), format!("`{args})` hides a wildcard arm")));
        }
    }
    out
}

#[test]
fn no_wildcard_arm_on_a_design_dimension_enum() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    assert!(files.len() > 20, "found the engine's sources");
    let mut found = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        for (line, what) in violations(&text) {
            found.push(format!("{}:{line}: {what}", f.display()));
        }
    }
    assert!(
        found.is_empty(),
        "decide on a design dimension with an exhaustive match (see docs/EXTENDING.md):\n{}",
        found.join("\n")
    );
}

/// The check itself catches what it is for (and passes what it must).
#[test]
fn the_check_finds_wildcards_and_matches_macros() {
    let bad = "fn f(p: Protocol) -> u8 {\n    match p {\n        Protocol::Mvto => 1,\n        _ => 2,\n    }\n}\n";
    assert_eq!(violations(bad).len(), 1, "{:?}", violations(bad));
    let tuple = "match (o.gc, x) {\n (GcPolicy::Vacuum, Some(e)) => { go(e) }\n _ => {}\n}";
    assert_eq!(violations(tuple).len(), 1);
    let guarded =
        "match s { VersionStorage::Delta => 1, _ if x => 2, VersionStorage::TimeTravel => 3 }";
    assert_eq!(violations(guarded).len(), 1);
    let hidden = "if matches!(self.db.protocol, Protocol::SiSsn | Protocol::SiSsi) {}";
    assert_eq!(violations(hidden).len(), 1);
    let fine = "match p {\n Protocol::Mvto => 1,\n Protocol::Si | Protocol::SiSsn => 2,\n}\nmatch n { 0 => 1, _ => 2 }\n// _ => in a comment: Protocol::Mvto\n";
    assert!(violations(fine).is_empty(), "{:?}", violations(fine));
}

/// The engine's top-level modules, lowest layer first; a module may import
/// (`crate::NAME`) only modules of a lower layer, or of its own when the
/// layer lists several independent leaves. `#[cfg(test)] mod tests` (in
/// its module's file, or a `tests.rs` of its own) and comments are left
/// out (a test may use anything).
const LAYERS: &[&[&str]] = &[
    &["types"],
    &["sync", "prefetch", "error", "ab", "test_util", "breakdown"],
    &["trace"],
    &["value"],
    &["serde_row"],
    &["options"],
    &["matrix"],
    &["presets"],
    &["storage"],
    &["stats"],
    &["tid"],
    &["index"],
    &["table"],
    &["typed"],
    &["gc"],
    &["cc"],
    &["log"],
    &["txn"],
    &["db"],
];

/// The top-level modules `text` (one file of the engine) names as
/// `crate::NAME` or in `crate::{NAME, ...}`.
fn imported_modules(text: &str) -> Vec<String> {
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(i) => &text[..i],
        None => text,
    };
    let text = strip_comments(text);
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    let mut out = Vec::new();
    for (i, _) in text.match_indices("crate::") {
        if text[..i].ends_with(|c: char| c.is_alphanumeric() || c == '_') {
            continue; // `my_crate::`: not ours (`$crate::` is)
        }
        let rest = &text[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let group = &group[..group.find('}').unwrap_or(group.len())];
            out.extend(group.split(',').map(|g| ident(g.trim())));
        } else {
            out.push(ident(rest));
        }
    }
    out.retain(|m| !m.is_empty());
    out
}

/// Imports that go to the same or a higher layer: `module -> module (file)`.
fn layering_violations(src: &Path) -> Vec<String> {
    let layer = |m: &str| LAYERS.iter().position(|l| l.contains(&m));
    let mut files = Vec::new();
    sources(src, &mut files);
    let mut found = Vec::new();
    for f in files {
        let rel = f.strip_prefix(src).unwrap();
        let top = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_str()
            .unwrap();
        let top = top.strip_suffix(".rs").unwrap_or(top);
        // `#[cfg(test)] mod tests;` in a file of its own, or under
        // `unit_tests/` (`#[path]`: unit tests that drive a module through
        // higher layers, `index::mvpbt`'s): test code.
        if top == "lib" || top == "unit_tests" || f.file_name().is_some_and(|n| n == "tests.rs") {
            continue;
        }
        let Some(own) = layer(top) else {
            found.push(format!(
                "{top} ({}) is in no layer of LAYERS",
                rel.display()
            ));
            continue;
        };
        let text = std::fs::read_to_string(&f).unwrap();
        for m in imported_modules(&text) {
            match layer(&m) {
                Some(l) if l < own || m == top => {}
                Some(_) => found.push(format!("{top} -> {m} ({})", rel.display())),
                None => {} // an item of lib.rs (a re-export), not a module
            }
        }
    }
    found.sort();
    found.dedup();
    found
}

#[test]
fn the_engine_modules_are_layered_without_cycles() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let found = layering_violations(&src);
    assert!(
        found.is_empty(),
        "a module imports one of its own or a higher layer (see LAYERS and docs/ARCHITECTURE.md):\n{}",
        found.join("\n")
    );
}

/// The layering check reads imports the way the engine writes them.
#[test]
fn the_layering_check_reads_imports() {
    let text = "use crate::storage::version::Version;\nuse crate::{error::Result, value::Key};\n\
                // crate::db in a comment\nfn f() { crate::gc::run(); $crate::cc::x(); }\n\
                #[cfg(test)]\nmod tests {\n    use crate::db::Database;\n}\n";
    assert_eq!(
        imported_modules(text),
        ["storage", "error", "value", "gc", "cc"],
        "{text}"
    );
}

/// The lab's hooks stay behind the `lab` feature, which no default turns
/// on: an embedder cannot switch phantom validation off, or flip the A/B
/// switch, by accident (issue 43, item 11). The tests get the feature
/// from the crate's dev-dependency on itself, so this reads the sources.
#[test]
fn the_lab_hooks_need_the_lab_feature() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let features = manifest
        .split("[features]")
        .nth(1)
        .and_then(|s| s.split("\n[").next())
        .expect("a [features] table");
    assert!(features.contains("\nlab = []"), "{features}");
    assert!(
        !features
            .lines()
            .any(|l| l.starts_with("default") && l.contains("lab")),
        "{features}"
    );
    for (file, item) in [
        ("src/lib.rs", "pub mod ab;"),
        ("src/lib.rs", "pub mod internals {"),
        (
            "src/db/mod.rs",
            "pub fn skip_phantom_validation_for_testing(",
        ),
    ] {
        let text = std::fs::read_to_string(root.join(file)).unwrap();
        let at = text.find(item).unwrap_or_else(|| panic!("{file}: {item}"));
        let before: Vec<&str> = text[..at].lines().rev().take(3).collect();
        assert!(
            before
                .iter()
                .any(|l| l.trim() == "#[cfg(feature = \"lab\")]"),
            "{file}: {item} is not behind the lab feature"
        );
    }
}
