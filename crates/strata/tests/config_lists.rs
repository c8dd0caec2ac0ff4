//! No hand-written lists of design-dimension variants in the tests.
//!
//! A test that runs over protocols, storage schemes, GC policies or
//! index-pointer schemes takes its list from the generator in
//! `tests/common` (the enums' `ALL`, filtered by the validity matrix), so a
//! new variant reaches it with no test edit. A literal list such as
//! `[Protocol::Mvto, Protocol::Mv2pl]` would silently leave the new variant
//! out; so would `matches!(p, Protocol::Mvto | Protocol::Mv2pl)` used as a
//! filter. This test reads the test sources of the workspace and fails on
//! either form with two or more variants, naming file and line; the
//! generator itself (`tests/common`) is where such lists belong (as named
//! predicates).
//!
//! Not flagged: one variant (a test about that variant), `ALL`, and `match`
//! arms (an exhaustive `match` makes the compiler ask about a new variant).

use crate::common;
use common::configs;
use std::path::{Path, PathBuf};

const DIMENSIONS: [&str; 4] = ["Protocol", "VersionStorage", "GcPolicy", "IndexPointers"];

/// `src` with comments and string and char literals blanked out (newlines
/// kept, so line numbers still hold).
fn code_only(src: &str) -> String {
    let b: Vec<char> = src.chars().collect();
    // The end (exclusive) of the comment or literal starting at i, if any.
    let skip = |i: usize| -> Option<usize> {
        let at = |j: usize| b.get(j).copied();
        let find = |from: usize, pat: &[char]| {
            (from..b.len()).find(|&j| pat.iter().enumerate().all(|(k, &c)| at(j + k) == Some(c)))
        };
        let ident_before = i > 0 && (b[i - 1].is_alphanumeric() || b[i - 1] == '_');
        match (b[i], at(i + 1)) {
            ('/', Some('/')) => Some(find(i, &['\n']).unwrap_or(b.len())),
            ('/', Some('*')) => Some(find(i + 2, &['*', '/']).map_or(b.len(), |j| j + 2)),
            ('r', Some('"' | '#')) if !ident_before => {
                let hashes = (i + 1..b.len()).take_while(|&j| b[j] == '#').count();
                if at(i + 1 + hashes) != Some('"') {
                    return None;
                }
                let mut close = vec!['"'];
                close.extend(std::iter::repeat_n('#', hashes));
                Some(find(i + 2 + hashes, &close).map_or(b.len(), |j| j + close.len()))
            }
            ('"', _) => {
                let mut j = i + 1;
                while j < b.len() && b[j] != '"' {
                    j += if b[j] == '\\' { 2 } else { 1 };
                }
                Some((j + 1).min(b.len()))
            }
            // A char literal ('x', '\n', '\u{..}'); otherwise a lifetime.
            ('\'', Some('\\')) => find(i + 3, &['\'']).map(|j| j + 1),
            ('\'', Some(_)) if at(i + 2) == Some('\'') => Some(i + 3),
            _ => None,
        }
    };
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    while i < b.len() {
        match skip(i) {
            Some(end) => {
                out.extend(
                    b[i..end]
                        .iter()
                        .map(|&c| if c == '\n' { '\n' } else { ' ' }),
                );
                i = end;
            }
            None => {
                out.push(b[i]);
                i += 1;
            }
        }
    }
    out
}

/// Whether `s` names a variant of a design dimension (`Protocol::Mvto`,
/// `strata::GcPolicy::None`), not `ALL` or a method.
fn names_a_variant(s: &str) -> bool {
    DIMENSIONS.iter().any(|d| {
        let pat = format!("{d}::");
        s.match_indices(&pat).any(|(at, _)| {
            let before = s[..at].chars().next_back();
            let ident: String = s[at + pat.len()..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            !before.is_some_and(|c| c.is_alphanumeric() || c == '_')
                && ident.starts_with(|c: char| c.is_ascii_uppercase())
                && ident.chars().any(|c| c.is_ascii_lowercase())
        })
    })
}

/// The index of the bracket closing the one at `open`.
fn closing(code: &[u8], open: usize) -> Option<usize> {
    let mut depth = 0i32;
    for (j, &c) in code.iter().enumerate().skip(open) {
        match c {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(j);
                }
            }
            _ => {}
        }
    }
    None
}

/// `s` split at `sep` where no bracket is open.
fn split_top(s: &str, sep: u8) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (j, c) in s.bytes().enumerate() {
        match c {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth -= 1,
            c if c == sep && depth == 0 => {
                parts.push(&s[start..j]);
                start = j + 1;
            }
            _ => {}
        }
    }
    parts.push(&s[start..]);
    parts
}

/// The 1-based lines of `src` holding a literal list of two or more
/// variants: an array or `vec!` whose elements name them, or a `matches!`
/// pattern with them as alternatives.
fn hand_written_lists(src: &str) -> Vec<usize> {
    let code = code_only(src);
    let bytes = code.as_bytes();
    let line = |at: usize| code[..at].matches('\n').count() + 1;
    let mut found = Vec::new();
    for (open, _) in code.match_indices('[') {
        let Some(close) = closing(bytes, open) else {
            continue;
        };
        let items = split_top(&code[open + 1..close], b',');
        if items.iter().filter(|e| names_a_variant(e)).count() >= 2 {
            found.push(line(open));
        }
    }
    for (at, m) in code.match_indices("matches!") {
        let Some(open) = code[at + m.len()..].find('(').map(|o| at + m.len() + o) else {
            continue;
        };
        let Some(close) = closing(bytes, open) else {
            continue;
        };
        let args = split_top(&code[open + 1..close], b',');
        let Some(pattern) = args.get(1) else {
            continue;
        };
        let pattern = pattern.split(" if ").next().unwrap_or(pattern);
        let alternatives = split_top(pattern, b'|');
        if alternatives.iter().filter(|a| names_a_variant(a)).count() >= 2 {
            found.push(line(at));
        }
    }
    found.extend(per_variant_macros(&code));
    found.sort_unstable();
    found.dedup();
    found
}

/// Every variant as `(dimension, name)`, from the enums' `ALL`.
fn variants() -> Vec<(&'static str, String)> {
    use strata::{GcPolicy, IndexPointers, Protocol, VersionStorage};
    let mut v = Vec::new();
    v.extend(Protocol::ALL.map(|x| ("Protocol", format!("{x:?}"))));
    v.extend(VersionStorage::ALL.map(|x| ("VersionStorage", format!("{x:?}"))));
    v.extend(GcPolicy::ALL.map(|x| ("GcPolicy", format!("{x:?}"))));
    v.extend(IndexPointers::ALL.map(|x| ("IndexPointers", format!("{x:?}"))));
    v
}

/// The other form of a hand-written list: one test per variant, each made
/// by an item-level macro call (`bank_test!(bank_mvto, Protocol::Mvto);`,
/// `tests!([mvto => Mvto, ssn => SiSsn])`). Flags the first call of a macro
/// whose calls (outside function bodies, without a body of their own) name
/// two or more variants of one dimension, qualified or bare (bare `None`
/// excepted: it is `Option`'s far more often).
fn per_variant_macros(code: &str) -> Vec<usize> {
    let all = variants();
    let bytes = code.as_bytes();
    let line = |at: usize| code[..at].matches('\n').count() + 1;
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    // macro name -> (first line, variants named as (dimension, variant))
    type Named<'a> = Vec<(&'a str, String)>;
    let mut calls: Vec<(String, usize, Named)> = Vec::new();
    let mut depth = 0i32;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'{' => depth += 1,
            b'}' => depth -= 1,
            b'!' if depth == 0 && i > 0 && ident(bytes[i - 1]) => {
                let start = (0..i)
                    .rev()
                    .take_while(|&j| ident(bytes[j]))
                    .last()
                    .unwrap();
                let name = &code[start..i];
                let open = (i + 1..bytes.len()).find(|&j| !bytes[j].is_ascii_whitespace());
                if let Some(open) = open.filter(|&o| matches!(bytes[o], b'(' | b'[')) {
                    if let Some(close) = closing(bytes, open) {
                        let args = &code[open + 1..close];
                        if name != "macro_rules" && !args.contains('{') {
                            let named: Vec<(&str, String)> = args
                                .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                                .filter(|w| *w != "None")
                                .filter_map(|w| all.iter().find(|(_, n)| n == w).cloned())
                                .collect();
                            match calls.iter_mut().find(|c| c.0 == name) {
                                Some(c) => c.2.extend(named),
                                None => calls.push((name.to_string(), line(start), named)),
                            }
                        }
                        i = close;
                    }
                }
            }
            _ => {}
        }
        i += 1;
    }
    calls
        .into_iter()
        .filter(|(_, _, named)| {
            named
                .iter()
                .any(|(d, n)| named.iter().any(|(d2, n2)| d == d2 && n != n2))
        })
        .map(|(_, l, _)| l)
        .collect()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries {
        let p = e.expect("read test directory").path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn tests_take_their_configurations_from_the_generator() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for krate in ["strata", "strata-verify", "strata-cli"] {
        rust_files(&crates.join(krate).join("tests"), &mut files);
    }
    let mut offences = Vec::new();
    let mut scanned = 0;
    for f in &files {
        let rel = f
            .strip_prefix(&crates)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        if rel.starts_with("strata/tests/common/") {
            continue;
        }
        let src = std::fs::read_to_string(f).unwrap();
        scanned += 1;
        for l in hand_written_lists(&src) {
            offences.push(format!("crates/{rel}:{l}"));
        }
    }
    // This file and its neighbours: the walk found the tests.
    assert!(scanned > 10, "only {scanned} test files found");
    assert!(
        offences.is_empty(),
        "hand-written lists of protocols / storage schemes / GC policies / pointer \
         schemes; take them from tests/common (configs(), protocols(), ..., a named \
         predicate for a subset):\n{}",
        offences.join("\n")
    );
}

#[test]
fn the_scanner_finds_every_form_and_only_those() {
    let flagged = r#"
fn a() {
    for p in [Protocol::SiSsn, Protocol::Mvto] {}
    let v = vec![
        (VersionStorage::AppendNewToOld, GcPolicy::TransactionLevel),
        (VersionStorage::Delta, GcPolicy::Vacuum),
    ];
    for o in [Options::default().gc(GcPolicy::None), Options::default().gc(strata::GcPolicy::Vacuum)] {}
    if !matches!(p, Protocol::Mv2pl | Protocol::Mvto) {}
    let x = [IndexPointers::Physical, IndexPointers::LogicalTupleId];
}
"#;
    assert_eq!(hand_written_lists(flagged), vec![3, 4, 8, 9, 10]);
    let per_variant = r#"
bank_test!(bank_mvto, Protocol::Mvto);
bank_test!(bank_mvocc, Protocol::Mvocc);

protocol_tests!(ListAppend, 16, [
    list_append_mvto => Mvto,
    list_append_si => Si,
]);
fn f() {}
"#;
    assert_eq!(hand_written_lists(per_variant), vec![2, 5]);
    let allowed = r#"
// for p in [Protocol::SiSsn, Protocol::Mvto] {}
/// `[GcPolicy::Vacuum, GcPolicy::Cooperative]`
/* [Protocol::Si, Protocol::SiSsi] */
fn b() {
    let s = "[Protocol::Si, Protocol::SiSsi]";
    let r = r"[Protocol::Si, Protocol::SiSsi]";
    let c = ['[', '"'];
    for p in Protocol::ALL {}
    for c in configs().protocols().gc(GcPolicy::Cooperative) {}
    for s in [VersionStorage::Delta] {}
    let xs = [Protocol::ALL.len(), VersionStorage::ALL.len()];
    let (a, b) = (Protocol::Mvto, Protocol::Mv2pl);
    match p {
        Protocol::Mvto | Protocol::Mv2pl => {}
        Protocol::Mvocc | Protocol::Si | Protocol::SiSsn | Protocol::SiSsi => {}
    }
    assert!(matches!(p, Protocol::Mvto));
    let y = [MyProtocol::Mvto, MyProtocol::Si];
    assert_eq!(p, Protocol::Mvto);
    assert_eq!(q, Protocol::Si);
}
one_test!(only_mvto, Protocol::Mvto);
other_test!(n2o, VersionStorage::AppendNewToOld);
proptest! {
    #[test]
    fn a(x in 0..1) { run(Protocol::Mvto); run(Protocol::Si); }
}
"#;
    assert_eq!(hand_written_lists(allowed), Vec::<usize>::new());
}

/// The generator is the validity matrix: the whole product splits into the
/// matrix's accepted and refused cells, in the same order, and a covering
/// sample has every variant that any valid configuration has.
#[test]
fn the_generator_follows_the_validity_matrix() {
    let all = configs().protocols().storages().gc_policies().pointers();
    let key = |p, s, g, i| format!("{p:?}/{s:?}/{g:?}/{i:?}");
    let matrix = strata::Options::validity_matrix();
    let cells = |ok: bool| -> Vec<String> {
        matrix
            .iter()
            .filter(|c| c.verdict.is_ok() == ok)
            .map(|c| key(c.protocol, c.storage, c.gc, c.pointers))
            .collect()
    };
    let got = |v: Vec<common::Config>| -> Vec<String> {
        v.iter()
            .map(|c| key(c.protocol, c.storage, c.gc, c.pointers))
            .collect()
    };
    assert_eq!(got(all.valid()), cells(true));
    assert_eq!(got(all.rejected()), cells(false));
    let sample = got(all.covering());
    for variant in variants() {
        let in_valid = cells(true)
            .iter()
            .any(|c| c.split('/').any(|part| part == variant.1));
        let in_sample = sample
            .iter()
            .any(|c| c.split('/').any(|part| part == variant.1));
        assert_eq!(in_sample, in_valid, "{variant:?} in the covering sample");
    }
    assert!(sample.len() < cells(true).len());
}

/// `STRATA_SOAK` is read in one place, `common::soak`, which refuses what
/// would make a soak run pass with no work or with the default work: 0, a
/// negative or fractional factor, words.
#[test]
fn soak_is_read_in_one_place_and_refuses_zero_and_bad_values() {
    use common::soak_from;
    assert_eq!(soak_from(None), Ok(1));
    assert_eq!(soak_from(Some("20")), Ok(20));
    assert_eq!(soak_from(Some(" 3 ")), Ok(3));
    for bad in ["0", "-2", "1.5", "x", ""] {
        let e = soak_from(Some(bad)).unwrap_err();
        assert!(
            e.contains("STRATA_SOAK") && e.contains("at least 1"),
            "{bad}: {e}"
        );
    }
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for krate in ["strata", "strata-verify", "strata-cli", "strata-workloads"] {
        rust_files(&crates.join(krate).join("tests"), &mut files);
        rust_files(&crates.join(krate).join("src"), &mut files);
    }
    let needle = ["env::var(\"STRATA", "_SOAK\")"].concat();
    let readers: Vec<String> = files
        .iter()
        .filter(|f| std::fs::read_to_string(f).unwrap().contains(&needle))
        .map(|f| {
            f.strip_prefix(&crates)
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    assert_eq!(readers, ["strata/tests/common/mod.rs"]);
}
