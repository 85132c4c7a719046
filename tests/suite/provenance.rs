//! Issue 36: every manifest says where its results come from, and results made by other code
//! are reported stale (never served silently).

use crate::common;

use dptune::sim::code_graph::fingerprints;
use dptune::sim::provenance::{Code, FINGERPRINTS};
use dptune::sim::{load, Profile};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn dptune(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dptune"))
        .args(args)
        .output()
        .unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        let dst = to.join(p.file_name().unwrap());
        if p.is_dir() {
            copy_tree(&p, &dst);
        } else {
            std::fs::copy(&p, &dst).unwrap();
        }
    }
}

/// The fingerprints built into this dptune are those of the tree it was built from.
#[test]
fn the_built_in_fingerprints_are_this_trees() {
    let now = fingerprints(Path::new("."));
    assert_eq!(now.len(), FINGERPRINTS.len());
    for ((file, fp, _), (built_file, built_fp, _)) in now.iter().zip(FINGERPRINTS) {
        assert_eq!((file.as_str(), fp.as_str()), (*built_file, *built_fp));
    }
}

/// A copy of what fingerprints read: `src`, `Cargo.lock` and the shipped data sets that
/// `include_str!` names (not the fetched cache).
fn source_tree(name: &str) -> common::TempDir {
    let tree = common::temp_dir(name);
    copy_tree(Path::new("src"), &tree.join("src"));
    std::fs::copy("Cargo.lock", tree.join("Cargo.lock")).unwrap();
    std::fs::create_dir_all(tree.join("data")).unwrap();
    for e in std::fs::read_dir("data").unwrap() {
        let p = e.unwrap().path();
        if p.is_file() {
            std::fs::copy(&p, tree.join("data").join(p.file_name().unwrap())).unwrap();
        }
    }
    tree
}

fn kinds_fingerprints(root: &Path) -> Vec<(String, String)> {
    fingerprints(root)
        .into_iter()
        .map(|(f, fp, _)| (f, fp))
        // The kinds' files (the registry itself is no kind: it reaches every kind).
        .filter(|(f, _)| f.starts_with("src/sim/studies/") && f != "src/sim/studies/mod.rs")
        .collect()
}

/// Registering a new study kind (its file and its two registry lines) leaves every other
/// kind's results fresh; an edit to the rest of the registry makes them all stale.
#[test]
fn registering_a_study_kind_leaves_the_other_kinds_fresh() {
    let tree = source_tree("provenance-registry");
    let before = kinds_fingerprints(&tree);
    let registry = tree.join("src/sim/studies/mod.rs");
    let source = std::fs::read_to_string(&registry).unwrap();
    let added = source
        .replacen("pub mod tuning;", "pub mod tuning;\npub mod added_kind;", 1)
        .replacen(
            "    tuning::KIND,",
            "    tuning::KIND,\n    added_kind::KIND,",
            1,
        );
    assert_ne!(added, source);
    std::fs::write(&registry, &added).unwrap();
    std::fs::write(
        tree.join("src/sim/studies/added_kind.rs"),
        "use super::StudyKind;\npub const KIND: StudyKind = todo!();\n",
    )
    .unwrap();
    let after: Vec<_> = kinds_fingerprints(&tree)
        .into_iter()
        .filter(|(f, _)| !f.ends_with("added_kind.rs"))
        .collect();
    assert_eq!(after, before);
    let edited = added.replacen("pub fn find(", "pub fn /* a change */ find(", 1);
    assert_ne!(edited, added);
    std::fs::write(&registry, edited).unwrap();
    let changed = kinds_fingerprints(&tree);
    for (file, fp) in &before {
        let now = changed.iter().find(|(f, _)| f == file).unwrap();
        assert_ne!(
            &now.1, fp,
            "{file}: the registry's code is part of every kind's"
        );
    }
}

/// A change to a tuner marks exactly the experiments whose study reaches it stale: every
/// tuning experiment (they reach all tuners through the registry), no pure-accounting curve.
#[test]
fn changing_a_tuner_makes_the_experiments_that_use_it_stale() {
    let tree = source_tree("provenance-tree");
    // Editing a test module changes no fingerprint (no result depends on a test).
    let table = tree.join("src/sim/table.rs");
    let source = std::fs::read_to_string(&table).unwrap();
    assert!(source.contains("#[cfg(test)]\nmod tests {"));
    let test_edit = source.replacen(
        "#[cfg(test)]\nmod tests {",
        "#[cfg(test)]\nmod tests {\n    fn added_by_the_test() -> &'static str { \"}\" }",
        1,
    );
    std::fs::write(&table, test_edit).unwrap();
    let untouched: Vec<_> = fingerprints(Path::new("."))
        .into_iter()
        .map(|(f, fp, _)| (f, fp))
        .collect();
    let after_test_edit: Vec<_> = fingerprints(&tree)
        .into_iter()
        .map(|(f, fp, _)| (f, fp))
        .collect();
    assert_eq!(after_test_edit, untouched);
    let naive = tree.join("src/tuners/naive.rs");
    let edited = std::fs::read_to_string(&naive)
        .unwrap()
        .replacen("fn ", "fn /* a change */ ", 1);
    std::fs::write(&naive, edited).unwrap();
    let after = fingerprints(&tree);
    let mut stale = BTreeSet::new();
    let mut fresh = BTreeSet::new();
    for file in common::shipped_experiment_files() {
        let exp = load(&file, Profile::Paper).unwrap();
        let code = Code::of(exp.kind.source);
        let (_, fp, files) = after.iter().find(|(f, _, _)| f == exp.kind.source).unwrap();
        let reaches = code.files.iter().any(|(f, _)| *f == "src/tuners/naive.rs");
        assert_eq!(
            fp != code.fingerprint,
            reaches,
            "{}: stale exactly when its kind reaches the tuner",
            file.display()
        );
        assert_eq!(
            reaches,
            files.iter().any(|(f, _)| f == "src/tuners/naive.rs")
        );
        if reaches {
            stale.insert(exp.name.clone());
        } else {
            fresh.insert(exp.name.clone());
        }
    }
    for name in [
        "svm-random-search",
        "gp-random-search",
        "dpsgd-equal-budget",
    ] {
        assert!(stale.contains(name), "{name} uses naive: {stale:?}");
    }
    for name in ["ps-fig2-rdp-by-order", "ps-fig8-conditional-sampling"] {
        assert!(fresh.contains(name), "{name} does not tune: {fresh:?}");
    }
}

fn tiny(dir: &Path) -> PathBuf {
    let file = dir.join("tiny.toml");
    std::fs::write(
        &file,
        "name = \"tiny\"\nkind = \"curves\"\nbase = { zcdp = 0.1 }\n[sweep]\nparam = \"mean\"\n\
         range = [2, 10]\npoints = 3\n[[series]]\ndist = \"logarithmic\"\n\
         [[plots]]\nname = \"eps\"\nx = \"mean\"\ny = \"epsilon\"\nseries = \"series\"\n\
         aggregate = \"none\"\nlines = true\n",
    )
    .unwrap();
    file
}

fn read_manifest(out: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(out.join("tiny/manifest.json")).unwrap()).unwrap()
}

/// A manifest records the code, the commit, the machine and the times; results made by other
/// code are kept and reported by `sim run` and `sim status`, and regenerated with
/// `--rerun-stale` (the old ones set aside, not deleted).
#[test]
fn manifests_carry_provenance_and_stale_results_are_reported() {
    let dir = common::temp_dir("provenance-stale");
    let file = tiny(&dir);
    let (f, out) = (file.to_str().unwrap(), dir.join("out"));
    let o = out.to_str().unwrap();
    let run = |extra: &[&str]| {
        let mut args = vec!["sim", "run", f, "--out", o, "--quiet"];
        args.extend(extra);
        dptune(&args)
    };
    let first = run(&[]);
    assert!(first.status.success(), "{}", text(&first));
    let m = read_manifest(&out);
    let code = Code::of(dptune::sim::studies::curves::KIND.source);
    assert_eq!(m["code"]["fingerprint"], code.fingerprint);
    assert_eq!(m["code"]["commit"], dptune::sim::provenance::COMMIT);
    let runs = m["provenance"]["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1);
    for key in [
        "commit",
        "rustc",
        "cpu",
        "openblas_core",
        "threads",
        "shard",
        "started",
        "finished",
        "wall_s",
    ] {
        assert!(
            !runs[0][key].is_null(),
            "run record lacks {key}: {}",
            runs[0]
        );
    }
    assert_eq!(runs[0]["shard"], "1/1");
    assert_eq!(m["provenance"]["unit_wall_s"]["units"], 1);
    // A second run of the same code changes nothing, the manifest included.
    let before = std::fs::read(out.join("tiny/manifest.json")).unwrap();
    assert!(run(&[]).status.success());
    assert_eq!(
        std::fs::read(out.join("tiny/manifest.json")).unwrap(),
        before
    );
    let status = dptune(&["sim", "status", f, "--out", o]);
    let s = text(&status);
    assert!(status.status.success(), "{s}");
    assert!(s.contains("tiny: complete, fresh"), "{s}");
    assert!(
        s.contains(dptune::sim::provenance::short(
            dptune::sim::provenance::COMMIT
        )),
        "{s}"
    );
    assert!(!s.contains("at least"), "{s}");
    // As if a process that ran the unit had been stopped and another had only finished up:
    // the recorded time is then a lower bound, and said to be.
    let mut resumed = m.clone();
    resumed["provenance"]["runs"][0]["units"] = 0.into();
    std::fs::write(out.join("tiny/manifest.json"), resumed.to_string()).unwrap();
    let s = text(&dptune(&["sim", "status", f, "--out", o]));
    assert!(
        s.contains("at least") && s.contains("a process that was stopped"),
        "{s}"
    );
    std::fs::write(out.join("tiny/manifest.json"), &before).unwrap();

    // Pretend the results were made when src/accounting/rdp.rs was different.
    let mut old = m.clone();
    old["code"]["fingerprint"] = "0123456789abcdef".into();
    old["code"]["files"]["src/accounting/rdp.rs"] = "0000000000000000".into();
    let doctored = format!("{}\n", serde_json::to_string_pretty(&old).unwrap());
    std::fs::write(out.join("tiny/manifest.json"), &doctored).unwrap();
    let s = text(&dptune(&["sim", "status", f, "--out", o]));
    assert!(s.contains("tiny: complete, STALE"), "{s}");
    assert!(s.contains("src/accounting/rdp.rs changed"), "{s}");
    let kept = run(&[]);
    let s = text(&kept);
    assert!(kept.status.success(), "{s}");
    assert!(
        s.contains("STALE tiny") && s.contains("--rerun-stale"),
        "{s}"
    );
    assert_eq!(
        std::fs::read_to_string(out.join("tiny/manifest.json")).unwrap(),
        doctored,
        "stale results are kept as they are without --rerun-stale"
    );
    let rerun = run(&["--rerun-stale"]);
    let s = text(&rerun);
    assert!(rerun.status.success(), "{s}");
    assert!(s.contains("moved to") && !s.contains("STALE tiny"), "{s}");
    assert_eq!(read_manifest(&out)["code"]["fingerprint"], code.fingerprint);
    let aside = out.join("tiny/superseded");
    let set_aside: Vec<_> = std::fs::read_dir(&aside).unwrap().collect();
    assert_eq!(set_aside.len(), 1, "the stale results are kept aside");

    // Results without any code record (an older dptune) are stale too.
    let mut legacy = read_manifest(&out);
    legacy.as_object_mut().unwrap().remove("code");
    std::fs::write(
        out.join("tiny/manifest.json"),
        serde_json::to_string_pretty(&legacy).unwrap(),
    )
    .unwrap();
    let s = text(&dptune(&["sim", "status", f, "--out", o]));
    assert!(s.contains("STALE: made before dptune recorded"), "{s}");
}

/// `sim verify` regenerates into a scratch folder and compares file by file; a match gives the
/// committed manifest the regeneration's code and provenance, a difference is named.
#[test]
fn verify_compares_file_by_file_and_adopts_provenance_on_a_match() {
    let dir = common::temp_dir("provenance-verify");
    let file = tiny(&dir);
    let (f, committed, scratch) = (
        file.to_str().unwrap(),
        dir.join("committed"),
        dir.join("scratch"),
    );
    let (c, s) = (committed.to_str().unwrap(), scratch.to_str().unwrap());
    assert!(dptune(&["sim", "run", f, "--out", c, "--quiet"])
        .status
        .success());
    // As if committed by an older dptune (no code record) from a file since edited in a way
    // that changes no result (another configuration hash).
    let mut m = read_manifest(&committed);
    let config_hash = m["config_hash"].clone();
    m.as_object_mut().unwrap().remove("code");
    m["config_hash"] = serde_json::json!("0000000000000000");
    std::fs::write(committed.join("tiny/manifest.json"), m.to_string()).unwrap();
    let doc = dir.join("reproducibility.md");
    let d = doc.to_str().unwrap();
    let verify = || {
        dptune(&[
            "sim",
            "verify",
            f,
            "--out",
            c,
            "--scratch",
            s,
            "--doc",
            d,
            "--quiet",
        ])
    };
    let o = verify();
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(t.contains("tiny: every file matches"), "{t}");
    let adopted = read_manifest(&committed);
    assert_eq!(
        adopted["code"]["fingerprint"],
        Code::of(dptune::sim::studies::curves::KIND.source).fingerprint
    );
    assert!(adopted["verified"]["compared"].is_string());
    // Every file matched, so the committed results are this configuration's too.
    assert_eq!(adopted["config_hash"], config_hash);
    let status = text(&dptune(&["sim", "status", f, "--out", c]));
    assert!(status.contains("tiny: complete"), "{status}");
    let summary = std::fs::read_to_string(&doc).unwrap();
    assert!(
        summary.contains("1 of 1 experiments regenerated so far; 1 match"),
        "{summary}"
    );
    // A committed figure edited by hand is caught, line and all.
    let svg = std::fs::read_dir(committed.join("tiny"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "svg"))
        .unwrap();
    let edited = format!(
        "<!-- edited -->\n{}",
        std::fs::read_to_string(&svg).unwrap()
    );
    std::fs::write(&svg, edited).unwrap();
    let o = verify();
    let t = text(&o);
    // The first comparison is dptune's, not a user's file in the way of the second.
    assert!(!scratch.join("tiny/superseded").exists(), "{t}");
    assert!(
        t.contains("1 file(s) differ") && t.contains("line 1"),
        "{t}"
    );
    let summary = std::fs::read_to_string(&doc).unwrap();
    assert!(
        summary.contains("1 of") && summary.contains("files differ"),
        "{summary}"
    );
    // A stamp made by other code counts for nothing: with the scratch folder gone and the
    // committed manifest's code another's, the summary says the experiment awaits this code.
    std::fs::remove_dir_all(&scratch).unwrap();
    let mut m = read_manifest(&committed);
    assert!(m["verified"]["compared"].is_string());
    m["code"]["fingerprint"] = serde_json::json!("0000000000000000");
    std::fs::write(committed.join("tiny/manifest.json"), m.to_string()).unwrap();
    let o = dptune(&[
        "sim",
        "verify",
        f,
        "--out",
        c,
        "--scratch",
        s,
        "--doc",
        d,
        "--summary-only",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let summary = std::fs::read_to_string(&doc).unwrap();
    assert!(
        summary.contains("0 of 1 experiments regenerated so far")
            && summary.contains("| `tiny` | not yet regenerated by this code |"),
        "{summary}"
    );
}
