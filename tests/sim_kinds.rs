//! Every registered study kind gets the runner's machinery: a run killed after its first unit
//! resumes to the same tables, and `--shard 1/2` + `--shard 2/2` equals one run. Each kind is
//! exercised on the first shipped experiment file of that kind, at the smoke profile.

use dptune::sim::studies::STUDIES;
use dptune::sim::table::Table;
use dptune::sim::{load, run, Profile, RunStatus, Shard};
use std::path::{Path, PathBuf};
use std::process::Command;

mod common;

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

#[test]
fn every_kind_resumes_after_a_kill_and_shards_merge_to_one_run() {
    let files: Vec<PathBuf> = common::shipped_experiment_files();
    let root = common::temp_dir("kinds");
    for kind in STUDIES {
        let file = files
            .iter()
            .find(|f| load(f, Profile::Smoke).unwrap().kind.name == kind.name)
            .unwrap_or_else(|| panic!("no shipped file of kind `{}`", kind.name));
        let exp = load(file, Profile::Smoke).unwrap();
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
