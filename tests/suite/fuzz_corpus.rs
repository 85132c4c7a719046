//! The fuzz targets (`dptune::fuzzing`, driven by cargo-fuzz in `fuzz/`) on the stable
//! toolchain: every committed corpus entry and every crash kept in `fuzz/regressions/<target>/`
//! must be read without a panic, so a fixed crash stays fixed in CI.

use dptune::fuzzing::TARGETS;
use std::path::Path;

fn entries(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .map(|d| d.filter_map(|e| e.ok()).map(|e| e.path()).collect())
        .unwrap_or_default();
    v.sort();
    v
}

#[test]
fn every_target_has_a_harness_and_a_seed_corpus() {
    for (name, _) in TARGETS {
        let harness = Path::new("fuzz/fuzz_targets").join(format!("{name}.rs"));
        let text = std::fs::read_to_string(&harness).unwrap_or_default();
        assert!(
            text.contains(&format!("dptune::fuzzing::{name}")),
            "{}",
            harness.display()
        );
        assert!(
            !entries(&Path::new("fuzz/corpus").join(name)).is_empty(),
            "{name}"
        );
    }
}

#[test]
fn corpora_and_regressions_replay_without_panics() {
    for (name, target) in TARGETS {
        for dir in ["fuzz/corpus", "fuzz/regressions"] {
            for file in entries(&Path::new(dir).join(name)) {
                let data = std::fs::read(&file).unwrap();
                let outcome = std::panic::catch_unwind(|| target(&data));
                assert!(outcome.is_ok(), "{name}: {} panics", file.display());
            }
        }
    }
}
