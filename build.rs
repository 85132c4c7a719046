//! Build-time provenance for the simulation harness (`src/sim/provenance.rs` reads it): the
//! code fingerprint of every study kind (`src/sim/code_graph.rs` says how it is made), the
//! git commit dptune is built from and whether its sources differed from it, and the rustc
//! version.

#[path = "src/sim/code_graph.rs"]
#[allow(dead_code)]
mod code_graph;

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=data");
    println!("cargo:rerun-if-changed=Cargo.lock");
    println!("cargo:rerun-if-changed=build.rs");
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap());

    let mut gen = String::from(
        "/// (file under src/sim/, code fingerprint, [(source file, its hash)]): see build.rs.\n\
         #[allow(clippy::type_complexity)]\n\
         pub const FINGERPRINTS: &[(&str, &str, &[(&str, &str)])] = &[\n",
    );
    for (file, fingerprint, entries) in code_graph::fingerprints(&root) {
        let list: String = entries
            .iter()
            .map(|(f, h)| format!("(\"{f}\", \"{h}\"), "))
            .collect();
        gen += &format!("    (\"{file}\", \"{fingerprint}\", &[{list}]),\n");
    }
    gen += "];\n";
    std::fs::write(out.join("code_fingerprints.rs"), gen).unwrap();

    let (commit, dirty) = git_state(&root);
    println!("cargo:rustc-env=DPTUNE_GIT_COMMIT={commit}");
    println!("cargo:rustc-env=DPTUNE_GIT_DIRTY={dirty}");
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let version = Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=DPTUNE_RUSTC_VERSION={version}");
}

/// The commit HEAD names and whether the files fingerprints hash differ from it ("unknown"
/// outside a git checkout). Reruns when HEAD moves.
fn git_state(root: &Path) -> (String, bool) {
    let git = |args: &[&str]| {
        Command::new("git")
            .arg("-C")
            .arg(root)
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let Some(commit) = git(&["rev-parse", "HEAD"]) else {
        return ("unknown".into(), false);
    };
    // A path that does not exist (a clone without packed-refs, a packed branch) would make
    // cargo rerun this script, recompile the library and relink every test on every command.
    let watch = |path: String| {
        let path = root.join(path);
        if path.exists() {
            println!("cargo:rerun-if-changed={}", path.display());
        }
    };
    for p in ["HEAD", "packed-refs"] {
        if let Some(path) = git(&["rev-parse", "--git-path", p]) {
            watch(path);
        }
    }
    if let Some(head_ref) = git(&["symbolic-ref", "-q", "HEAD"]) {
        if let Some(path) = git(&["rev-parse", "--git-path", &head_ref]) {
            watch(path);
        }
    }
    let dirty = Command::new("git")
        .arg("-C")
        .arg(root)
        .args([
            "diff",
            "--quiet",
            "HEAD",
            "--",
            "src",
            "data",
            "Cargo.lock",
            "Cargo.toml",
            "build.rs",
        ])
        .status()
        .map(|s| !s.success())
        .unwrap_or(true);
    (commit, dirty)
}
