//! Every registered study kind gets the runner's machinery: a run killed after its first unit
//! resumes to the same tables, and `--shard 1/2` + `--shard 2/2` equals one run. Each kind is
//! exercised on its cheapest shipped experiment file (smoke profile; `SMALLEST`), one test per
//! kind, so that they run side by side.

use dptune::sim::studies::STUDIES;
use dptune::sim::table::Table;
use dptune::sim::{load, run, Profile, RunStatus, Shard};
use std::path::Path;
use std::process::Command;

use crate::common;

/// Every merged and derived table of a complete run, without timing columns.
fn tables(status: RunStatus) -> Vec<Table> {
    let RunStatus::Complete {
        results, derived, ..
    } = status
    else {
        panic!("incomplete: {status:?}")
    };
    std::iter::once(results)
        .chain(derived)
        .map(|p| Table::read_parquet(&p).unwrap().without_timing())
        .collect()
}

fn tables_in(dir: &Path, exp: &dptune::sim::Experiment) -> Vec<Table> {
    let study = exp.study.as_ref();
    std::iter::once(study.output())
        .chain(study.derived())
        .map(|t| {
            Table::read_parquet(&dir.join(&exp.name).join(t))
                .unwrap()
                .without_timing()
        })
        .collect()
}

/// The cheapest shipped file of each kind at the smoke profile (wall times measured with the
/// dev build, issue 36: all under 2 s but privacy-audit's 22 s, the only file of its kind).
const SMALLEST: &[(&str, &str)] = &[
    ("tuning", "gibo-equal-budget"),
    ("curves", "ps-fig2-rdp-by-order"),
    ("conditional-sampling", "ps-fig8-conditional-sampling"),
    ("gp-ucb-bounds", "kusner-bounds"),
    ("gp-ucb-suite", "kusner-suite"),
    ("lipschitz-gain-suite", "kusner-lipschitz"),
    ("svm-alpha-sweep", "ps-fig1-svm-alpha"),
    ("lr-search", "ps-fig7-lr-search"),
    ("propose-test-walks", "dw-walks-low-noise"),
    ("propose-test-budgets", "dw-table1-budgets"),
    ("gibo-paths", "gibo-fig5-misspecified"),
    ("pareto-front", "dpareto-svt-fronts"),
    ("pareto-maps", "dpareto-fig2-svt-maps"),
    ("privacy-audit", "privacy-audit"),
    ("dpsgd-table", "dpsgd-table-adult"),
    ("dpsgd-replay", "dpsgd-replay-adult"),
];

#[test]
fn every_kind_has_a_kill_and_shard_test_below() {
    for kind in STUDIES {
        let (_, name) = SMALLEST
            .iter()
            .find(|(k, _)| *k == kind.name)
            .unwrap_or_else(|| panic!("kind `{}` has no file in SMALLEST", kind.name));
        let exp = load(
            &Path::new("sims").join(format!("{name}.toml")),
            Profile::Smoke,
        )
        .unwrap();
        assert_eq!(exp.kind.name, kind.name, "{name}");
    }
    assert_eq!(SMALLEST.len(), STUDIES.len());
}

macro_rules! kind_tests {
    ($($test:ident: $kind:literal),* $(,)?) => {$(
        #[test]
        fn $test() {
            resumes_after_a_kill_and_shards_merge_to_one_run($kind);
        }
    )*};
}

kind_tests! {
    tuning_resumes_and_shards: "tuning",
    curves_resumes_and_shards: "curves",
    conditional_sampling_resumes_and_shards: "conditional-sampling",
    gp_ucb_bounds_resumes_and_shards: "gp-ucb-bounds",
    gp_ucb_suite_resumes_and_shards: "gp-ucb-suite",
    lipschitz_resumes_and_shards: "lipschitz-gain-suite",
    svm_alpha_resumes_and_shards: "svm-alpha-sweep",
    lr_search_resumes_and_shards: "lr-search",
    propose_test_walks_resumes_and_shards: "propose-test-walks",
    propose_test_budgets_resumes_and_shards: "propose-test-budgets",
    gibo_paths_resumes_and_shards: "gibo-paths",
    pareto_front_resumes_and_shards: "pareto-front",
    pareto_maps_resumes_and_shards: "pareto-maps",
    privacy_audit_resumes_and_shards: "privacy-audit",
    dpsgd_table_resumes_and_shards: "dpsgd-table",
    dpsgd_replay_resumes_and_shards: "dpsgd-replay",
}

fn resumes_after_a_kill_and_shards_merge_to_one_run(kind: &str) {
    let (_, name) = SMALLEST.iter().find(|(k, _)| *k == kind).unwrap();
    let file = Path::new("sims").join(format!("{name}.toml"));
    let root = common::temp_dir(&format!("kinds-{kind}"));
    {
        let kind = STUDIES.iter().find(|k| k.name == kind).unwrap();
        let exp = load(&file, Profile::Smoke).unwrap();
        let dir = root.join(kind.name);
        let opts = |out: &str, shard: &str| {
            common::options(
                Profile::Smoke,
                &dir.join(out),
                2,
                Shard::parse(shard).unwrap(),
            )
        };
        let whole = tables(run(&exp, &opts("whole", "1/1")).unwrap());
        let first = run(&exp, &opts("sharded", "1/2")).unwrap();
        let units = exp.study.units().len();
        if units > 1 {
            assert!(
                matches!(first, RunStatus::Partial { .. }),
                "{}: shard 1/2 alone completed",
                kind.name
            );
        }
        let sharded = tables(run(&exp, &opts("sharded", "2/2")).unwrap());
        assert_eq!(sharded, whole, "{}: shards differ from one run", kind.name);
        // Killed after the first unit (exit 137, as a kill would), then resumed.
        let killed = dir.join("killed");
        let args = |extra: &[&str]| {
            let mut a = vec![
                "sim".to_string(),
                "run".into(),
                file.display().to_string(),
                "--profile".into(),
                "smoke".into(),
                "--quiet".into(),
                "--threads".into(),
                "1".into(),
                "--out".into(),
                killed.display().to_string(),
            ];
            a.extend(extra.iter().map(|s| s.to_string()));
            a
        };
        let o = Command::new(env!("CARGO_BIN_EXE_dptune"))
            .args(args(&["--stop-after-units", "1"]))
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(137), "{}: not cut short", kind.name);
        assert!(
            !killed.join(&exp.name).join(exp.study.output()).exists(),
            "{}: a merged table from an incomplete run",
            kind.name
        );
        let o = Command::new(env!("CARGO_BIN_EXE_dptune"))
            .args(args(&[]))
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{}: {}",
            kind.name,
            String::from_utf8_lossy(&o.stderr)
        );
        assert_eq!(
            tables_in(&killed, &exp),
            whole,
            "{}: resumed run differs",
            kind.name
        );
    }
    std::fs::remove_dir_all(root).unwrap();
}

/// `sims/README.md` lists every shipped file with its kind, and every registered kind.
#[test]
fn the_sims_index_matches_the_files_and_the_registry() {
    let index = std::fs::read_to_string("sims/README.md").unwrap();
    let mut listed = 0;
    for p in common::shipped_experiment_files() {
        let exp = load(&p, Profile::Paper).unwrap();
        // The path below sims/: `gpu/NAME.toml` for the GPU-sized files.
        let name = p
            .strip_prefix("sims")
            .unwrap()
            .to_string_lossy()
            .to_string();
        let row = format!("| `{name}` | `{}` |", exp.kind.name);
        assert!(index.contains(&row), "sims/README.md lacks `{row}`");
        listed += 1;
    }
    let rows = index
        .lines()
        .filter(|l| l.starts_with("| `") && l.contains(".toml` |"))
        .count();
    assert_eq!(
        rows, listed,
        "sims/README.md lists a file that is not in sims/"
    );
    for kind in STUDIES {
        let row = format!("| `{}` | {} |", kind.name, kind.about);
        assert!(
            index.contains(&row),
            "sims/README.md lacks the kind row `{row}`"
        );
    }
}
