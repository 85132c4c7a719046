//! Issue 42, the parts that need no Slurm: the scripts `dptune sim slurm` writes, its errors,
//! the list of missing units (`sim merge`, `sim status --require-complete`) and the lock that
//! refuses a second run of the same units. On a real Slurm: `just test-slurm`
//! (tools/test-slurm.sh).

use crate::common;
use std::path::Path;
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_dptune");
/// Nine units of about 0.7 s each (tests/fixtures/slurm/walks.toml).
const WALKS: &str = "tests/fixtures/slurm/walks.toml";
/// Nine fast units (the smoke profile of sims/dw-walks.toml: under a second in all).
const FAST: &str = "sims/dw-walks.toml";

fn dptune(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn the_scripts_run_every_shard_then_the_merge() {
    let out = common::temp_dir("slurm-scripts");
    let o = out.to_str().unwrap();
    let args = [
        "sim",
        "slurm",
        WALKS,
        "--profile",
        "smoke",
        "--tasks",
        "3",
        "--out",
        o,
        "--partition",
        "gpu",
        "--time",
        "1:30:00",
        "--cpus-per-task",
        "2",
        "--gpus",
        "1",
        "--sbatch=--account=proj",
    ];
    let first = dptune(&args);
    assert!(first.status.success(), "{}", text(&first));
    let folder = out.join("slurm").join("slurm-walks-smoke");
    let array = std::fs::read_to_string(folder.join("array.sbatch")).unwrap();
    let merge = std::fs::read_to_string(folder.join("merge.sbatch")).unwrap();
    for line in [
        "#SBATCH --array=1-3",
        "#SBATCH --cpus-per-task=2",
        "#SBATCH --partition=gpu",
        "#SBATCH --time=1:30:00",
        "#SBATCH --gres=gpu:1",
        "#SBATCH --account=proj",
        &format!("#SBATCH --output={}/logs/array-%A_%a.out", folder.display()),
    ] {
        assert!(array.lines().any(|l| l == line), "no `{line}` in\n{array}");
    }
    // The frozen copy of this very binary, by absolute path; the data cache passed through.
    let run = array.lines().find(|l| l.starts_with("exec ")).unwrap();
    let binary = run.split_whitespace().nth(1).unwrap();
    assert!(Path::new(binary).is_absolute(), "{run}");
    assert_eq!(std::fs::read(binary).unwrap(), std::fs::read(BIN).unwrap());
    assert!(run.ends_with(&format!(
        " sim run {WALKS} --profile smoke --out {o} --shard \"${{SLURM_ARRAY_TASK_ID}}/3\" --threads 2 --quiet --no-report"
    )), "{run}");
    assert!(
        array.lines().any(|l| l.starts_with("export DPTUNE_DATA=/")),
        "{array}"
    );
    assert!(
        merge.lines().any(|l| l.starts_with("exec ")
            && l.ends_with(&format!(
                " sim merge {WALKS} --profile smoke --out {o} --tasks 3 --threads 2"
            ))),
        "{merge}"
    );
    assert!(
        !merge.contains("--gres") && !merge.contains("--array"),
        "{merge}"
    );
    assert!(merge.contains("#SBATCH --account=proj"), "{merge}");
    // The same command again leaves them as they are; an edited script is never overwritten.
    let again = dptune(&args);
    assert!(again.status.success(), "{}", text(&again));
    assert_eq!(
        std::fs::read_to_string(folder.join("array.sbatch")).unwrap(),
        array
    );
    let edited = format!("{array}# mine\n");
    std::fs::write(folder.join("array.sbatch"), &edited).unwrap();
    let mut other = args;
    other[6] = "2"; // --tasks 2: another script
    let refused = dptune(&other);
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused));
    assert!(
        text(&refused).contains("array.sbatch: exists and is not as dptune wrote it"),
        "{}",
        text(&refused)
    );
    assert_eq!(
        std::fs::read_to_string(folder.join("array.sbatch")).unwrap(),
        edited
    );
}

#[test]
fn bad_arguments_name_the_flag_and_its_range() {
    let out = common::temp_dir("slurm-args");
    let o = out.to_str().unwrap();
    let base = ["sim", "slurm", WALKS, "--profile", "smoke", "--out", o];
    for (extra, says) in [
        (
            &["--tasks", "0"][..],
            "'--tasks <TASKS>': must be a whole number from 1 to 100000",
        ),
        (
            &["--tasks", "10"][..],
            "invalid --tasks = 10: must be at most 9",
        ),
        (
            &["--tasks", "3", "--time", "1h"][..],
            "'--time <TIME>': must be a Slurm time limit",
        ),
        (
            &["--tasks", "3", "--gpus", "0"][..],
            "'--gpus <GPUS>': must be a whole number from 1 to 64",
        ),
        (
            &["--tasks", "3", "--cpus-per-task", "0"][..],
            "'--cpus-per-task <CPUS_PER_TASK>': must be a whole number from 1 to 1024",
        ),
        (
            &["--tasks", "3", "--partition", "a b"][..],
            "'--partition <PARTITION>': must be a partition name",
        ),
        (&[][..], "--tasks <TASKS>"),
    ] {
        let o = dptune(&[&base[..], extra].concat());
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(says), "{extra:?}: {err}");
        assert_eq!(
            err.trim_end().lines().count(),
            1,
            "{extra:?}: one line: {err}"
        );
    }
}

#[test]
fn submitting_without_slurm_says_so() {
    let out = common::temp_dir("slurm-nosbatch");
    let empty = common::temp_dir("slurm-nosbatch-path");
    let o = Command::new(BIN)
        .args([
            "sim",
            "slurm",
            WALKS,
            "--profile",
            "smoke",
            "--tasks",
            "3",
            "--submit",
            "--out",
        ])
        .arg(&*out)
        .env("PATH", &*empty)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("sbatch: not found on PATH: --submit needs Slurm's client commands"),
        "{err}"
    );
    // The scripts are written all the same, to submit where Slurm is.
    assert!(out.join("slurm/slurm-walks-smoke/array.sbatch").is_file());
}

/// The `missing:` lines of a listing.
fn missing(o: &Output) -> Vec<String> {
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| l.strip_prefix("  missing: "))
        .map(String::from)
        .collect()
}

#[test]
fn merge_lists_exactly_the_missing_units_and_writes_nothing_until_all_are_there() {
    let out = common::temp_dir("slurm-merge");
    let o = out.to_str().unwrap();
    let common_args = ["--profile", "smoke", "--out", o];
    let run = |shard: &str| {
        let r = dptune(
            &[
                &["sim", "run", FAST, "--quiet", "--shard", shard][..],
                &common_args,
            ]
            .concat(),
        );
        assert!(r.status.success(), "{}", text(&r));
    };
    let merge = || dptune(&[&["sim", "merge", FAST, "--tasks", "3"][..], &common_args].concat());
    let status = || {
        dptune(
            &[
                &["sim", "status", FAST, "--require-complete", "--tasks", "3"][..],
                &common_args,
            ]
            .concat(),
        )
    };
    let m = merge();
    assert_eq!(m.status.code(), Some(2), "{}", text(&m));
    assert_eq!(missing(&m).len(), 9, "{}", text(&m));
    run("1/3");
    let m = merge();
    assert_eq!(m.status.code(), Some(2), "{}", text(&m));
    // Shard 1/3 ran units 1, 4, 7 (g = 0.5, 0.05, 0.005).
    assert_eq!(
        missing(&m),
        [
            "g=0.2 (unit 2, shard 2/3)",
            "g=0.1 (unit 3, shard 3/3)",
            "g=0.02 (unit 5, shard 2/3)",
            "g=0.01 (unit 6, shard 3/3)",
            "g=0.002 (unit 8, shard 2/3)",
            "g=0.001 (unit 9, shard 3/3)",
        ],
        "{}",
        text(&m)
    );
    assert!(
        text(&m).contains("dw-walks: 6 of 9 units missing"),
        "{}",
        text(&m)
    );
    assert!(
        String::from_utf8_lossy(&m.stderr)
            .contains("6 unit(s) of 1 experiment(s) missing (listed above): nothing merged"),
        "{}",
        text(&m)
    );
    let dir = out.join("dw-walks");
    assert!(!dir.join("walks.parquet").exists() && !dir.join("passes.md").exists());
    let s = status();
    assert_eq!(s.status.code(), Some(2), "{}", text(&s));
    assert_eq!(missing(&s), missing(&m));
    // A damaged part counts as missing (a run sets it aside and runs its unit again).
    run("2/3");
    let part = std::fs::read_dir(dir.join("parts"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "parquet"))
        .unwrap();
    let mut bytes = std::fs::read(&part).unwrap();
    let last = bytes.len() - 10;
    bytes[last] ^= 1;
    std::fs::write(&part, bytes).unwrap();
    let m = merge();
    assert_eq!(m.status.code(), Some(2), "{}", text(&m));
    assert_eq!(
        missing(&m).len(),
        4,
        "3 units of shard 3/3 and the damaged one: {}",
        text(&m)
    );
    run("3/3");
    run("1/3");
    run("2/3");
    let m = merge();
    assert!(m.status.success(), "{}", text(&m));
    assert!(dir.join("walks.parquet").is_file() && dir.join("passes.md").is_file());
    let s = status();
    assert!(s.status.success(), "{}", text(&s));
}

#[test]
fn a_second_run_of_the_same_units_at_once_is_refused() {
    let out = common::temp_dir("slurm-lock");
    let o = out.to_str().unwrap();
    let args = |shard: &'static str| {
        vec![
            "sim",
            "run",
            WALKS,
            "--profile",
            "smoke",
            "--threads",
            "1",
            "--quiet",
            "--out",
            o,
            "--shard",
            shard,
        ]
    };
    // Shard 1/3: three units of about 0.7 s.
    let mut first = Command::new(BIN)
        .args(args("1/3"))
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let lock = out.join("slurm-walks").join(".shard-1-of-3.lock");
    let t0 = std::time::Instant::now();
    while !std::fs::read_to_string(&lock).is_ok_and(|t| t.contains("shard 1/3")) {
        assert!(t0.elapsed().as_secs() < 60, "the first run took no lock");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let same = dptune(&args("1/3"));
    let other_split = dptune(&args("1/2"));
    let other_shard = dptune(&args("2/3"));
    let first_ok = first.wait().unwrap().success();
    assert!(first_ok);
    assert_eq!(same.status.code(), Some(2), "{}", text(&same));
    assert!(
        text(&same).contains(&format!(
            "shard 1/3 of `slurm-walks` is already being run here by process {}",
            first.id()
        )),
        "{}",
        text(&same)
    );
    assert_eq!(other_split.status.code(), Some(2), "{}", text(&other_split));
    assert!(
        text(&other_split).contains("is being run here as shard 1/3 by process")
            && text(&other_split).contains("must be shards I/N of one N"),
        "{}",
        text(&other_split)
    );
    // Another shard of the same split runs beside it.
    assert!(other_shard.status.success(), "{}", text(&other_shard));
    // Each unit ran once, and no lock is left behind.
    let timings = std::fs::read_to_string(out.join("slurm-walks/parts/timings.jsonl")).unwrap();
    assert_eq!(timings.lines().count(), 6, "{timings}");
    let locks: Vec<String> = std::fs::read_dir(out.join("slurm-walks"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .filter(|n| n.ends_with(".lock"))
        .collect();
    assert!(locks.is_empty(), "{locks:?}");
}
