//! Records the git commit the binary is built from (`STRATA_GIT_COMMIT`,
//! `+dirty` with uncommitted changes) for `strata explore`'s results;
//! `unknown` outside a git checkout.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
    let commit = git(&["rev-parse", "--short=12", "HEAD"]);
    let dirty =
        git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
    let v = match commit {
        Some(c) if dirty => format!("{c}+dirty"),
        Some(c) => c,
        None => "unknown".into(),
    };
    println!("cargo:rustc-env=STRATA_GIT_COMMIT={v}");
    // Rebuilt when HEAD moves or the index changes (a commit, an add).
    for rel in ["HEAD", "index"] {
        if let Some(p) = git(&["rev-parse", "--git-path", rel]) {
            println!("cargo:rerun-if-changed={p}");
        }
    }
    if let Some(common) = git(&["rev-parse", "--git-common-dir"]) {
        println!("cargo:rerun-if-changed={common}/refs/heads");
        println!("cargo:rerun-if-changed={common}/packed-refs");
    }
}
