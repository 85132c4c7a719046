//! `dptune tune` over a small training script (tests/fixtures/tune/train.sh), end to end through
//! the binary: the privacy statement is the library's guarantee for the same settings; a killed
//! search resumes with no run redone; a crashing run and a run printing garbage count as runs
//! with the worst score; a budget that cannot be met and bad files are refused before any run;
//! `--jobs 1` and `--jobs 4` release the same.

use crate::common;

use common::temp_dir;
use dptune::accounting::{
    steps_for_epochs, Accountant, Conversion, DpSgd, Event, Gaussian, Orders,
};
use dptune::tuners::papernot_steinke::PapernotSteinke;
use dptune::tuners::Tuner;
use dptune::workloads::{Declarations, PartitionedDeclaration, Space, TrainingDeclaration};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/tune")
        .join(name)
}

/// The fixture search file with `edits` (from, to) applied, written into `dir`.
fn search_file(dir: &Path, edits: &[(&str, &str)]) -> PathBuf {
    edited("search.toml", dir, edits)
}

/// Fixture `name` with `edits` (from, to) applied, written into `dir` under its name.
fn edited(name: &str, dir: &Path, edits: &[(&str, &str)]) -> PathBuf {
    let mut text = std::fs::read_to_string(fixture(name)).unwrap();
    for (from, to) in edits {
        assert!(text.contains(from), "{from}");
        text = text.replace(from, to);
    }
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// What the fixture search file declares, built independently of dptune tune: runs that are
/// DP-SGD (Poisson lots of 256 of 30000, 2 epochs, σ = 6) followed by a Gaussian release of a
/// mean of 5000 records in [0, 1] with noise multiplier 10.
fn fixture_declarations(partitioned: Option<PartitionedDeclaration>) -> Declarations {
    let steps = steps_for_epochs(30000, 256, 2).unwrap();
    let run = Event::dpsgd(&DpSgd::new(256.0 / 30000.0, 6.0, steps).unwrap()).unwrap();
    let score = Event::of_gaussian(&Gaussian::new(1.0 / 5000.0, 10.0 / 5000.0).unwrap());
    Declarations {
        name: "test".into(),
        space: Space::UnitBox { dim: 2 },
        training: Some(TrainingDeclaration {
            run: Event::composed(vec![run, score]).unwrap(),
        }),
        gain_prior: None,
        lipschitz: None,
        partitioned,
        per_user: None,
    }
}

/// The fixture's [tuner] lines, which tests replace by another tuner.
const FIXTURE_TUNER: &str = "name = \"papernot-steinke\"\ndist = \"tnb:1\"\nmean = 6";

struct Ran {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Ran {
    /// The JSON of the last line.
    fn json(&self) -> Value {
        let last = self.stdout.lines().last().unwrap_or("");
        serde_json::from_str(last)
            .unwrap_or_else(|e| panic!("{e}: {}\n{}", self.stdout, self.stderr))
    }
}

fn tune(file: &Path, out: &Path, flags: &[&str], env: &[(&str, &str)]) -> Ran {
    tune_over("train.sh", file, out, flags, env)
}

/// `dptune tune FILE --out OUT --quiet FLAGS -- tests/fixtures/tune/SCRIPT` with `env`.
fn tune_over(script: &str, file: &Path, out: &Path, flags: &[&str], env: &[(&str, &str)]) -> Ran {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_dptune"));
    cmd.arg("tune")
        .arg(file)
        .arg("--out")
        .arg(out)
        .arg("--quiet")
        .args(flags)
        .arg("--")
        .arg(fixture(script));
    for (k, v) in env {
        cmd.env(k, v);
    }
    let o = cmd.output().expect("binary runs");
    Ran {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

/// The private journal of the search in `out`, as JSON.
fn journal(out: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(out.join("private/journal.json")).unwrap())
        .unwrap()
}

/// The number of runs K a best-of search drew (private: only its journal has it).
fn drawn_k(out: &Path) -> u64 {
    journal(out)["state"]["record"]["session"]["best-of"]["k"]
        .as_u64()
        .unwrap()
}

/// The lines of `calls`, each distinct (no run made twice).
fn distinct(calls: &[String]) -> usize {
    calls
        .iter()
        .collect::<std::collections::BTreeSet<_>>()
        .len()
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(String::from)
        .collect()
}

#[test]
fn the_statement_is_the_librarys_guarantee_and_only_the_released_run_is_kept() {
    let dir = temp_dir("tune-statement");
    let file = search_file(&dir, &[("seed = 7", "seed = 3")]);
    let out = dir.join("out");
    let count = dir.join("count");
    let ran = tune(&file, &out, &[], &[("TUNE_COUNT", count.to_str().unwrap())]);
    assert_eq!(ran.code, 0, "{}\n{}", ran.stdout, ran.stderr);
    let json = ran.json();
    // The library's guarantee for the same settings: K ~ TNB(η = 1, mean 6).
    let declared = fixture_declarations(None);
    let g = PapernotSteinke::tnb(1.0, 6.0)
        .unwrap()
        .guarantee(
            &declared,
            1e-5,
            &Accountant::new(Orders::Continuous, Conversion::Cks),
        )
        .unwrap();
    assert_eq!(json["privacy"]["epsilon"].as_f64(), Some(g.epsilon));
    assert_eq!(json["privacy"]["delta"].as_f64(), Some(g.delta));
    assert_eq!(
        json["privacy"]["theorem"].as_str(),
        Some(g.theorem.as_str())
    );
    assert!(
        ran.stdout.contains("Privacy: (")
            && ran
                .stdout
                .contains("adding or removing one training record")
    );
    // K runs, each once (K is private: not in the statement); only the released run's
    // directory is left, moved out of the private folder, with its model.
    assert_eq!(json["runs"], Value::Null);
    let k = drawn_k(&out);
    assert_eq!(lines(&count).len() as u64, k);
    assert_eq!(distinct(&lines(&count)) as u64, k);
    let kept = std::fs::read_dir(out.join("private/runs")).unwrap().count();
    assert_eq!(kept, 0);
    match json["released"]["kind"].as_str() {
        Some("run") => {
            assert!(out.join("released-run/model.txt").is_file());
            let hyper = &json["released"]["hyperparameters"];
            assert!(
                hyper["lr"].as_f64().unwrap() >= 1e-4 && hyper["clip"].as_f64().unwrap() <= 4.0
            );
        }
        other => {
            assert_eq!(other, Some("nothing"));
            assert!(!out.join("released-run").exists());
        }
    }
    // The unreleased scores are not printed; --show-private prints them.
    assert!(!ran.stdout.contains("PRIVATE"));
    // Run again: the finished search is reported, nothing is rerun.
    let again = tune(
        &file,
        &out,
        &["--show-private"],
        &[("TUNE_COUNT", count.to_str().unwrap())],
    );
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert_eq!(lines(&count).len() as u64, k);
    assert_eq!(again.json()["released"], json["released"]);
    assert!(again.stdout.contains("PRIVATE (--show-private)"));
}

#[test]
fn jobs_do_not_change_the_release() {
    let dir = temp_dir("tune-jobs");
    let file = search_file(&dir, &[("mean = 6", "mean = 12"), ("seed = 7", "seed = 2")]);
    let one = tune(&file, &dir.join("one"), &["--jobs", "1"], &[]);
    let four = tune(&file, &dir.join("four"), &["--jobs", "4"], &[]);
    assert_eq!(one.code, 0, "{}", one.stderr);
    assert_eq!(four.code, 0, "{}", four.stderr);
    let (a, b) = (one.json(), four.json());
    assert!(
        drawn_k(&dir.join("four")) > 4,
        "a search with runs side by side: {a}"
    );
    assert_eq!(
        a["released"]["hyperparameters"],
        b["released"]["hyperparameters"]
    );
    assert_eq!(a["released"]["score"], b["released"]["score"]);
    assert_eq!(
        a["released"]["hyperparameters"],
        b["released"]["hyperparameters"]
    );
    assert_eq!(a["released"]["score"], b["released"]["score"]);
    assert_eq!(a["privacy"], b["privacy"]);
}

#[test]
fn a_killed_search_resumes_with_no_run_redone() {
    let dir = temp_dir("tune-resume");
    let file = search_file(&dir, &[(FIXTURE_TUNER, "name = \"naive\"\ncandidates = 6")]);
    let whole = tune(&file, &dir.join("whole"), &[], &[]);
    assert_eq!(whole.code, 0, "{}", whole.stderr);
    let count = dir.join("count");
    let env = [("TUNE_COUNT", count.to_str().unwrap())];
    let out = dir.join("out");
    let killed = tune(&file, &out, &["--stop-after-runs", "2"], &env);
    assert_eq!(killed.code, 3, "exits as if killed: {}", killed.stderr);
    let before = lines(&count);
    assert_eq!(before.len(), 2);
    let resumed = tune(&file, &out, &[], &env);
    assert_eq!(resumed.code, 0, "{}", resumed.stderr);
    let calls = lines(&count);
    assert_eq!(calls[..2], before[..]);
    assert_eq!(
        (calls.len(), distinct(&calls)),
        (6, 6),
        "no run redone, none lost"
    );
    assert_eq!(
        resumed.json()["released"]["hyperparameters"],
        whole.json()["released"]["hyperparameters"]
    );
    assert_eq!(
        resumed.json()["released"]["score"],
        whole.json()["released"]["score"]
    );
}

/// The runs of a naive search of 8 candidates whose runs with clip > 2 crash, print garbage or
/// time out: each counts, told the worst score (0, plus the score's noise), and the private
/// table says why.
#[test]
fn failed_runs_count_as_the_worst_score() {
    let dir = temp_dir("tune-fail");
    for (mode, says, extra) in [
        ("crash", "exited with", ""),
        ("garbage", "not JSON", ""),
        ("slow", "timeout", "timeout_s = 0.5\n"),
    ] {
        let file = search_file(
            &dir,
            &[
                (FIXTURE_TUNER, "name = \"naive\"\ncandidates = 8"),
                ("seed = 7\n", &format!("seed = 7\n{extra}")),
            ],
        );
        let out = dir.join(mode);
        let ran = tune(
            &file,
            &out,
            &["--show-private", "--jobs", "8"],
            &[("TUNE_MODE", mode)],
        );
        assert_eq!(ran.code, 0, "{mode}: {}", ran.stderr);
        let json = ran.json();
        assert_eq!(json["runs"].as_u64(), Some(8));
        // Whether the released run failed is private (it says its raw score was the worst):
        // not in the statement; --show-private says so, with the way to start again (every
        // run fails when it is slow).
        assert_eq!(json["released"]["failure"], Value::Null);
        if mode == "slow" {
            assert!(
                ran.stdout.contains("the released run FAILED") && ran.stdout.contains(says),
                "{}",
                ran.stdout
            );
            assert!(ran.stdout.contains("start a new search"), "{}", ran.stdout);
        }
        // Without --show-private the curator is told on stderr, marked private.
        let quiet = tune(&file, &out, &[], &[]);
        assert!(
            quiet.stderr.contains("PRIVATE, for you") && quiet.stderr.contains("runs failed"),
            "{mode}: {}",
            quiet.stderr
        );
        assert!(!quiet.stdout.contains("failed"), "{mode}: {}", quiet.stdout);
        let rows: Vec<&str> = ran
            .stdout
            .lines()
            .filter(|l| l.trim_start().starts_with("run "))
            .collect();
        assert_eq!(
            rows.len(),
            8,
            "{mode}: every run is on record: {}",
            ran.stdout
        );
        for row in rows {
            let clip: f64 = row
                .split("clip=")
                .nth(1)
                .unwrap()
                .split(' ')
                .next()
                .unwrap()
                .parse()
                .unwrap();
            let told: f64 = row
                .split("told ")
                .nth(1)
                .unwrap()
                .split(' ')
                .next()
                .unwrap()
                .parse()
                .unwrap();
            if mode == "slow" || clip > 2.0 {
                assert!(
                    row.contains("FAILED") && row.contains(says),
                    "{mode}: {row}"
                );
                // The worst score, 0, plus noise of sd 10/5000.
                assert!(told.abs() < 0.02, "{mode}: {row}");
            } else {
                assert!(!row.contains("FAILED"), "{mode}: {row}");
            }
        }
    }
}

/// Naive composition accounted by the PLD alone, with noise so small that the losses outgrow
/// the PLD's grid (its memory bound), has no PLD bound: refused naming the accountant, never
/// printed as inf, and nothing runs. The default (the tighter of RDP and PLD) states a finite bound.
#[test]
fn an_infinite_bound_is_refused_naming_the_accountant() {
    let dir = temp_dir("tune-inf");
    let pld = "name = \"naive\"\ncandidates = 4\naccountant = \"pld\"";
    let file = search_file(
        &dir,
        &[
            (FIXTURE_TUNER, pld),
            ("noise_multiplier = 6.0", "noise_multiplier = 0.005"),
        ],
    );
    let count = dir.join("count");
    let ran = tune(
        &file,
        &dir.join("out"),
        &["--dry-run"],
        &[("TUNE_COUNT", count.to_str().unwrap())],
    );
    assert_eq!(ran.code, 2, "{}", ran.stderr);
    assert!(
        ran.stderr.contains("search.toml:")
            && ran.stderr.contains("tuner.accountant")
            && ran.stderr.contains("the PLD accountant gives no bound"),
        "{}",
        ran.stderr
    );
    assert!(!ran.stdout.contains("= inf"), "{}", ran.stdout);
    assert!(!count.exists(), "no run was made");
    let file = search_file(
        &dir,
        &[
            (FIXTURE_TUNER, "name = \"naive\"\ncandidates = 4"),
            ("noise_multiplier = 6.0", "noise_multiplier = 0.005"),
        ],
    );
    let ran = tune(&file, &dir.join("best"), &["--dry-run"], &[]);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    assert!(!ran.stdout.contains("= inf"), "{}", ran.stdout);
}

#[test]
fn a_budget_that_cannot_be_met_is_refused_before_any_run() {
    let dir = temp_dir("tune-budget");
    let file = search_file(
        &dir,
        &[
            ("delta = 1e-5", "delta = 1e-5\nepsilon = 0.05"),
            (
                "noise_multiplier = 6.0",
                "noise_multiplier = \"calibrated\"",
            ),
        ],
    );
    let count = dir.join("count");
    let ran = tune(
        &file,
        &dir.join("out"),
        &[],
        &[("TUNE_COUNT", count.to_str().unwrap())],
    );
    assert_eq!(ran.code, 2);
    assert!(
        ran.stderr.contains("search.toml:")
            && ran.stderr.contains("run.noise_multiplier")
            && ran.stderr.contains("cannot meet the budget"),
        "{}",
        ran.stderr
    );
    assert!(!count.exists(), "no run was made");
    // A budget that can be met: the calibrated noise meets it.
    let file = search_file(
        &dir,
        &[
            ("delta = 1e-5", "delta = 1e-5\nepsilon = 1.5"),
            (
                "noise_multiplier = 6.0",
                "noise_multiplier = \"calibrated\"",
            ),
        ],
    );
    let ran = tune(&file, &dir.join("met"), &[], &[]);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let p = &ran.json()["privacy"];
    assert!(p["epsilon"].as_f64().unwrap() <= 1.5);
    assert_eq!(
        p["calibrated"]["field"].as_str(),
        Some("run.noise_multiplier")
    );
}

#[test]
fn bad_input_names_the_file_line_and_key_and_nothing_is_overwritten() {
    let dir = temp_dir("tune-bad");
    for (from, to, says) in [
        (
            "seed = 7",
            "seed = 7\nsed = 3",
            "search.toml:3:1: sed: unknown key (allowed: space, seed",
        ),
        (
            "clip = { uniform = [0.1, 4] }",
            "clip = { log-uniform = [0, 4] }",
            "space.clip: log-uniform = [lo, hi] needs lo > 0",
        ),
        (
            "name = \"papernot-steinke\"",
            "name = \"dp-gibo\"",
            "DP-GIBO reads every validation user's loss",
        ),
        (
            "name = \"papernot-steinke\"",
            "name = \"dp-gd\"",
            "exact loss gradient",
        ),
        ("[privacy]\ndelta = 1e-5", "", "privacy: missing"),
        ("noise = 10.0", "", "say what the score is"),
        ("mean = 6", "mean = 6\nmeen = 2", "tuner.meen: unknown key"),
    ] {
        let file = search_file(&dir, &[(from, to)]);
        let ran = tune(&file, &dir.join("out"), &[], &[]);
        assert_eq!(ran.code, 2, "{to}");
        assert!(ran.stderr.contains(says), "{to}: {}", ran.stderr);
    }
    let empty = dir.join("empty.toml");
    std::fs::write(
        &empty,
        "[space]\n[tuner]\nname = \"naive\"\n[score]\nrange = [0, 1]\npublic = true\n",
    )
    .unwrap();
    let ran = tune(&empty, &dir.join("out"), &[], &[]);
    assert!(ran.stderr.contains("space: empty"), "{}", ran.stderr);
    // A missing command is named before any run.
    let file = search_file(&dir, &[]);
    let o = Command::new(env!("CARGO_BIN_EXE_dptune"))
        .args([
            "tune",
            file.to_str().unwrap(),
            "--out",
            dir.join("x").to_str().unwrap(),
            "--",
            "no-such-trainer-dptune",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        err.contains("no-such-trainer-dptune") && err.contains("PATH"),
        "{err}"
    );
    // A folder holding the user's files, or another search's journal, is refused untouched.
    let mine = dir.join("mine");
    std::fs::create_dir_all(&mine).unwrap();
    std::fs::write(mine.join("notes.txt"), "mine").unwrap();
    let ran = tune(&file, &mine, &[], &[]);
    assert_eq!(ran.code, 2);
    assert!(ran.stderr.contains("did not write"), "{}", ran.stderr);
    assert_eq!(
        std::fs::read_to_string(mine.join("notes.txt")).unwrap(),
        "mine"
    );
    let done = dir.join("done");
    assert_eq!(tune(&file, &done, &[], &[]).code, 0);
    let other = search_file(&dir, &[("seed = 7", "seed = 8")]);
    let ran = tune(&other, &done, &[], &[]);
    assert_eq!(ran.code, 2);
    assert!(ran.stderr.contains("another search file"), "{}", ran.stderr);
}

/// Propose-test through a command: every candidate of the public grid runs on each shard
/// (`DPTUNE_SHARD`), then the final run; the statement is the library's guarantee; a search
/// killed among the shard runs resumes with none redone.
#[test]
fn propose_test_runs_the_command_per_shard_then_once_more() {
    use dptune::propose_test::ProposeTestDoubling;
    let dir = temp_dir("tune-propose-test");
    let file = search_file(
        &dir,
        &[(
            FIXTURE_TUNER,
            "name = \"propose-test\"\nshards = 4\neps0 = 0.5\ngrid = 3",
        )],
    );
    let count = dir.join("count");
    let env = [("TUNE_COUNT", count.to_str().unwrap())];
    let out = dir.join("out");
    let killed = tune(&file, &out, &["--stop-after-runs", "10"], &env);
    assert_eq!(killed.code, 3, "{}", killed.stderr);
    assert_eq!(lines(&count).len(), 10);
    let ran = tune(&file, &out, &["--jobs", "3", "--show-private"], &env);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let calls = lines(&count);
    assert_eq!(calls.len(), 9 * 4 + 1, "no shard run redone: {calls:?}");
    assert_eq!(distinct(&calls), 9 * 4 + 1, "each once");
    assert_eq!(calls.iter().filter(|c| c.starts_with('s')).count(), 9 * 4);
    assert!(
        !calls.last().unwrap().starts_with('s'),
        "the final run is last"
    );
    let json = ran.json();
    assert_eq!(json["runs"].as_u64(), Some(37));
    let declared = fixture_declarations(Some(PartitionedDeclaration {
        private_validation_records: Some(5000),
    }));
    let t = ProposeTestDoubling::from_params(&"shards = 4\neps0 = 0.5\ngrid = 3".parse().unwrap())
        .unwrap();
    let g = t
        .guarantee(
            &declared,
            1e-5,
            &Accountant::new(Orders::Continuous, Conversion::Cks),
        )
        .unwrap();
    assert_eq!(json["privacy"]["epsilon"].as_f64(), Some(g.epsilon));
    assert!(
        ran.stdout.contains("  released: run 1\n"),
        "the final run is released: {}",
        ran.stdout
    );
    assert!(out.join("released-run/model.txt").is_file());
    let kept = std::fs::read_dir(out.join("private/runs")).unwrap().count();
    assert_eq!(kept, 0, "the shard runs' outputs are deleted");
}

/// `dptune tune FILE --jobs 2 --out OUT` over runs that sleep 30 s (each run's shell appends
/// its pid to `pids`), to be spawned.
fn slow_search(file: &Path, out: &Path, pids: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_dptune"));
    cmd.arg("tune")
        .arg(file)
        .args(["--quiet", "--jobs", "2", "--out"])
        .arg(out)
        .arg("--")
        .arg(fixture("train.sh"))
        .env("TUNE_MODE", "slow")
        .env("TUNE_PIDS", pids);
    cmd
}

/// Ctrl-C (SIGINT) stops every run and what it started, records nothing of the stopped runs,
/// and the same command resumes them.
#[test]
fn an_interrupted_search_stops_its_runs_and_resumes() {
    let dir = temp_dir("tune-interrupt");
    let file = search_file(&dir, &[(FIXTURE_TUNER, "name = \"naive\"\ncandidates = 4")]);
    let (count, pids, out) = (dir.join("count"), dir.join("pids"), dir.join("out"));
    let child = slow_search(&file, &out, &pids)
        .env("TUNE_COUNT", &count)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while lines(&pids).len() < 2 {
        assert!(start.elapsed().as_secs() < 20, "the runs did not start");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let pid = libc::pid_t::try_from(child.id()).unwrap();
    // SAFETY: signals the child process only.
    unsafe {
        libc::kill(pid, libc::SIGINT);
    }
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("interrupted") && err.contains("resume"),
        "{err}"
    );
    assert!(
        start.elapsed().as_secs() < 20,
        "the runs were stopped, not waited for"
    );
    for p in lines(&pids) {
        let p: libc::pid_t = p.parse().unwrap();
        // SAFETY: signal 0 only asks whether the process exists.
        let alive = unsafe { libc::kill(p, 0) } == 0;
        assert!(!alive, "run {p} still runs");
    }
    let ran = tune(&file, &out, &[], &[("TUNE_COUNT", count.to_str().unwrap())]);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let calls = lines(&count);
    assert_eq!((calls.len(), distinct(&calls)), (6, 4), "{calls:?}");
    assert!(
        calls[2..].contains(&calls[0]) && calls[2..].contains(&calls[1]),
        "the stopped runs ran again: {calls:?}"
    );
}

/// `--dry-run` states the guarantee and the runs of the real search and runs nothing.
#[test]
fn a_dry_run_states_the_guarantee_and_runs_nothing() {
    let dir = temp_dir("tune-dry");
    let file = search_file(&dir, &[]);
    let count = dir.join("count");
    let env = [("TUNE_COUNT", count.to_str().unwrap())];
    let dry = tune(&file, &dir.join("dry"), &["--dry-run"], &env);
    assert_eq!(dry.code, 0, "{}", dry.stderr);
    assert!(
        !count.exists() && !dir.join("dry").exists(),
        "nothing ran, nothing written"
    );
    let real = tune(&file, &dir.join("real"), &[], &env);
    let privacy = |text: &str| {
        text.lines()
            .filter(|l| l.starts_with("Privacy:") || l.starts_with("  runs:"))
            .map(String::from)
            .collect::<Vec<_>>()
    };
    assert_eq!(privacy(&dry.stdout).len(), 2, "{}", dry.stdout);
    assert_eq!(privacy(&dry.stdout), privacy(&real.stdout));
}

/// Without a seed in the file, a secret one is drawn and kept in the journal only; a killed
/// search resumes with it (no run redone).
#[test]
fn a_search_without_a_seed_draws_a_secret_one_and_keeps_it() {
    let dir = temp_dir("tune-secret-seed");
    let file = search_file(
        &dir,
        &[
            ("seed = 7\n", ""),
            (FIXTURE_TUNER, "name = \"naive\"\ncandidates = 4"),
        ],
    );
    let count = dir.join("count");
    let env = [("TUNE_COUNT", count.to_str().unwrap())];
    let out = dir.join("out");
    assert_eq!(tune(&file, &out, &["--stop-after-runs", "2"], &env).code, 3);
    let seed = journal(&out)["seed"]
        .as_u64()
        .expect("the journal keeps the seed");
    let before = lines(&count);
    let ran = tune(&file, &out, &[], &env);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let calls = lines(&count);
    assert_eq!((calls.len(), distinct(&calls)), (4, 4));
    assert_eq!(calls[..2], before[..]);
    assert!(ran.stdout.contains("a secret seed"), "{}", ran.stdout);
    assert!(
        !ran.stdout.contains(&seed.to_string()),
        "the seed is not printed"
    );
    assert_eq!(ran.json()["seed"], Value::Null);
    assert_eq!(
        journal(&out)["seed"].as_u64(),
        Some(seed),
        "resumed with the same seed"
    );
}

/// A run declared (ε0, δ0)-DP with a public score goes through the tuners' own guarantee:
/// Liu–Talwar's geometric K gives 3ε0 by the TNB approximate-DP base, which spends δ = 1 −
/// f(1 − δ0), f the geometric law's generating function (computed here in closed form), and is
/// stated at privacy.delta; a privacy.delta below that spend is refused, naming it. Naive
/// composition of k runs gives at most kε0 (basic composition, or the PLD's where tighter), and
/// too many runs for privacy.delta are refused the same way. A private score or a budget with
/// such a run, or a count with no bound for it, is refused (the last saying to declare the RDP
/// curve).
#[test]
fn runs_declared_approximately_dp_get_the_approximate_dp_theorems() {
    use dptune::accounting::approximate;
    let dir = temp_dir("tune-approx");
    let text = |tuner: &str, score: &str, extra: &str| {
        format!(
            "[space]\nx = {{ uniform = [0, 1] }}\n[tuner]\n{tuner}\n[privacy]\ndelta = 1e-5\n{extra}\n\
             [run]\nkind = \"approx-dp\"\nepsilon = 0.5\ndelta = 1e-7\n[score]\nrange = [0, 1]\n{score}\n"
        )
    };
    let dry = |name: &str, body: String| {
        let file = dir.join(name);
        std::fs::write(&file, body).unwrap();
        tune(&file, &dir.join("out"), &["--dry-run"], &[])
    };
    let stated = |ran: &Ran| -> (f64, f64) {
        let line = ran
            .stdout
            .lines()
            .find(|l| l.starts_with("Privacy:"))
            .unwrap();
        let inner = line.split(['(', ')']).nth(1).unwrap();
        let mut parts = inner.split(", ").map(|x| x.parse::<f64>().unwrap());
        (parts.next().unwrap(), parts.next().unwrap())
    };
    let lt = dry(
        "lt.toml",
        text("name = \"liu-talwar\"\nmean = 5", "public = true", ""),
    );
    assert_eq!(lt.code, 0, "{}", lt.stderr);
    assert_eq!(stated(&lt), (1.5, 1e-5), "{}", lt.stdout);
    assert!(lt.stdout.contains(approximate::TNB_APPROX), "{}", lt.stdout);
    let (gamma, keep) = (1.0 / 5.0, 1.0 - 1e-7);
    let spent = 1.0 - gamma * keep / (1.0 - (1.0 - gamma) * keep);
    let short = dry(
        "lt-short.toml",
        text("name = \"liu-talwar\"\nmean = 5", "public = true", "")
            .replace("delta = 1e-5", &format!("delta = {:e}", 0.9 * spent)),
    );
    assert_eq!(short.code, 2, "{}", short.stdout);
    assert!(
        short.stderr.contains("lt-short.toml") && short.stderr.contains("privacy.delta"),
        "{}",
        short.stderr
    );
    let naive = dry(
        "naive.toml",
        text("name = \"naive\"\ncandidates = 4", "public = true", ""),
    );
    assert_eq!(stated(&naive), (2.0, 1e-5), "{}", naive.stdout);
    for (name, body, says) in [
        ("private.toml", text("name = \"naive\"\ncandidates = 4", "records = 100\nnoise = 5", ""), "public = true"),
        ("budget.toml", text("name = \"naive\"\ncandidates = 4", "public = true", "epsilon = 3"), "nothing dptune can calibrate"),
        ("many.toml", text("name = \"naive\"\ncandidates = 200", "public = true", ""), "privacy.delta"),
        ("threshold.toml", text("name = \"liu-talwar\"\nvariant = \"threshold\"\nthreshold = 0.5\nhalt_probability = 0.1", "public = true", ""), "declare the run's RDP curve"),
        ("truncated.toml", text("name = \"papernot-steinke\"\ndist = \"tnb:1\"\nmean = 5\ntruncate = 20", "public = true", ""), "declare the run's RDP curve"),
    ] {
        let ran = dry(name, body);
        assert_eq!(ran.code, 2, "{name}");
        assert!(
            ran.stderr.contains(name) && ran.stderr.contains(says),
            "{name}: {}",
            ran.stderr
        );
    }
}

/// The DP-GIBO search file (tests/fixtures/tune/gibo.toml) with `edits`, written into `dir`.
fn gibo_file(dir: &Path, edits: &[(&str, &str)]) -> PathBuf {
    edited("gibo.toml", dir, edits)
}

fn tune_losses(file: &Path, out: &Path, flags: &[&str], env: &[(&str, &str)]) -> Ran {
    tune_over("losses.sh", file, out, flags, env)
}

/// DP-GIBO drives a command that prints its validation users' losses: the statement is the
/// library's DP-GIBO guarantee for the same settings (20 users on the unit box), one run per
/// point (T·b = 8), nothing kept; `--jobs 3` releases what `--jobs 1` does, and a search killed
/// after 3 runs resumes with no run redone to the same release.
#[test]
fn dp_gibo_drives_a_command_that_prints_per_user_losses() {
    use dptune::workloads::PerUserDeclaration;
    let dir = temp_dir("tune-gibo");
    let file = gibo_file(&dir, &[]);
    let whole = tune_losses(&file, &dir.join("whole"), &["--jobs", "1"], &[]);
    assert_eq!(whole.code, 0, "{}", whole.stderr);
    let json = whole.json();
    let params: toml::Table =
        "mu = 2\nsteps = 4\nclip = 1\nlengthscale = 0.3\nbatch = 2\nselect_steps = 50"
            .parse()
            .unwrap();
    let tuner = dptune::tuners::build("dp-gibo", &params).unwrap();
    let declared = Declarations {
        per_user: Some(PerUserDeclaration {
            n_users: 20,
            domain: vec![(0.0, 1.0); 2],
            evaluation_sd: 0.0,
            prior_lengthscales: None,
            evaluation: None,
        }),
        ..Declarations::of_space("test", Space::UnitBox { dim: 2 })
    };
    let g = tuner
        .guarantee(&declared, 1e-5, &Accountant::default())
        .unwrap();
    assert_eq!(json["privacy"]["epsilon"].as_f64(), Some(g.epsilon));
    assert_eq!(
        json["privacy"]["theorem"].as_str(),
        Some(g.theorem.as_str())
    );
    assert_eq!(json["runs"], 8);
    let chosen = &json["released"]["hyperparameters"];
    assert!(chosen["lr"].as_f64().is_some() && chosen["clip"].as_f64().is_some());
    assert!(whole.stdout.contains("last iterate"), "{}", whole.stdout);
    let runs = std::fs::read_dir(dir.join("whole/private/runs"))
        .unwrap()
        .count();
    assert_eq!(runs, 0, "no run's output is kept");

    let side = tune_losses(&file, &dir.join("side"), &["--jobs", "3"], &[]);
    assert_eq!(side.code, 0, "{}", side.stderr);
    assert_eq!(side.json()["released"], json["released"]);

    let count = dir.join("count");
    let env = [("TUNE_COUNT", count.to_str().unwrap())];
    let out = dir.join("out");
    let killed = tune_losses(&file, &out, &["--stop-after-runs", "3"], &env);
    assert_eq!(killed.code, 3, "exits as if killed: {}", killed.stderr);
    assert_eq!(lines(&count).len(), 3);
    let resumed = tune_losses(&file, &out, &[], &env);
    assert_eq!(resumed.code, 0, "{}", resumed.stderr);
    let mut ran = lines(&count);
    assert_eq!(ran.len(), 8, "no run redone, none lost: {ran:?}");
    ran.sort();
    ran.dedup();
    assert_eq!(ran.len(), 8, "every point ran once");
    assert_eq!(resumed.json()["released"], json["released"]);
}

/// A total budget calibrates μ; a run that fails gives every user the declared failed loss
/// (the search goes on, and only --show-private says it failed); bad DP-GIBO files are refused
/// before any run, naming the key.
#[test]
fn dp_gibo_calibrates_mu_counts_failed_runs_and_refuses_bad_files() {
    let dir = temp_dir("tune-gibo-budget");
    let file = gibo_file(
        &dir,
        &[
            ("mu = 2", "mu = \"calibrated\""),
            ("delta = 1e-5", "delta = 1e-5\nepsilon = 1.5"),
        ],
    );
    let ran = tune_losses(
        &file,
        &dir.join("out"),
        &["--show-private"],
        &[("TUNE_MODE", "crash")],
    );
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let json = ran.json();
    let eps = json["privacy"]["epsilon"].as_f64().unwrap();
    assert!(eps <= 1.5 && eps > 1.49, "{eps}");
    assert_eq!(json["privacy"]["calibrated"]["field"], "tuner.mu");
    assert!(ran.stdout.contains("mu = "), "{}", ran.stdout);
    let failed = ran.stdout.matches("FAILED").count();
    assert!(
        (1..8).contains(&failed),
        "some runs failed, and were counted: {}",
        ran.stdout
    );
    let steps = ran
        .stdout
        .lines()
        .filter(|l| l.starts_with("  step "))
        .count();
    assert_eq!(steps, 8, "every run is on record: {}", ran.stdout);
    for (edits, key) in [
        (
            vec![(
                "[users]",
                "[score]\nrange = [0, 1]\npublic = true\n\n[users]",
            )],
            "score",
        ),
        (vec![("count = 20", "count = 0")], "users.count"),
        (vec![("[users]\ncount = 20\nfailed_loss = 1", "")], "users"),
        (
            vec![(
                "clip = { uniform = [0.1, 4] }",
                "clip = { integer = [1, 4] }",
            )],
            "space.clip",
        ),
        (
            vec![("delta = 1e-5", "delta = 1e-5\nepsilon = 1")],
            "privacy.epsilon",
        ),
        (vec![("mu = 2", "mu = \"calibrated\"")], "tuner.mu"),
        (vec![("mu = 2", "mu = \"inf\"")], "tuner.mu"),
    ] {
        let file = gibo_file(&dir, &edits);
        let out = dir.join(format!("bad-{key}"));
        let ran = tune_losses(&file, &out, &[], &[]);
        assert_eq!(ran.code, 2, "{key}: {}", ran.stderr);
        assert!(ran.stderr.contains(key), "{key}: {}", ran.stderr);
        assert!(!out.exists(), "{key}: nothing ran");
    }
}

// ---------------------------------------------------------------------------------------------
// Issue 61: what is published is what the theorem covers; a journal cannot lie; runs die with
// dptune.

/// Whether `text` holds `needle` as a whole number (not as the start of a longer one).
fn holds_number(text: &str, needle: &str) -> bool {
    text.match_indices(needle).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + needle.len()..].chars().next();
        !before.is_some_and(|c| c.is_ascii_digit() || c == '.')
            && !after.is_some_and(|c| c.is_ascii_digit())
    })
}

/// Every file under `dir`, as text (lossy).
fn texts_under(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut all = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return all;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            all.extend(texts_under(&p));
        } else {
            let bytes = std::fs::read(&p).unwrap();
            all.push((p, String::from_utf8_lossy(&bytes).into_owned()));
        }
    }
    all
}

/// For every tuner a command can drive, the published outputs (stdout without --show-private,
/// release.json, the released run's directory) hold no private value of the journal: no raw
/// score of any run, no unreleased told score, no run index or count of a tuner whose count is
/// secret, no time; the released directory has no captured log or run file, and its name no
/// index.
#[test]
fn published_outputs_carry_no_private_value() {
    let dir = temp_dir("tune-published");
    let cases: Vec<(&str, String, &str)> = vec![
        ("papernot-steinke", FIXTURE_TUNER.into(), "train.sh"),
        ("liu-talwar", "name = \"liu-talwar\"\nmean = 5".into(), "train.sh"),
        (
            "threshold",
            "name = \"liu-talwar\"\nvariant = \"threshold\"\nthreshold = 0.9\nhalt_probability = 0.05"
                .into(),
            "train.sh",
        ),
        ("naive", "name = \"naive\"\ncandidates = 5".into(), "train.sh"),
        (
            "propose-test",
            "name = \"propose-test\"\nshards = 2\neps0 = 0.5\ngrid = 2".into(),
            "train.sh",
        ),
        ("dp-gibo", String::new(), "losses.sh"),
    ];
    for (name, tuner, script) in cases {
        let file = if script == "losses.sh" {
            gibo_file(&dir, &[])
        } else {
            search_file(&dir, &[(FIXTURE_TUNER, &tuner)])
        };
        let out = dir.join(name);
        let ran = tune_over(script, &file, &out, &["--jobs", "2"], &[]);
        assert_eq!(ran.code, 0, "{name}: {}", ran.stderr);
        let j = journal(&out);
        let release = std::fs::read_to_string(out.join("release.json")).unwrap();
        let released_dir = texts_under(&out.join("released-run"));
        let mut published = vec![
            ("stdout".to_string(), ran.stdout.clone()),
            ("release.json".into(), release.clone()),
        ];
        for (p, t) in &released_dir {
            published.push((p.display().to_string(), t.clone()));
        }
        // No captured output or run file in the released directory.
        for (p, _) in &released_dir {
            let f = p.file_name().unwrap().to_str().unwrap();
            assert!(
                !["stdout.log", "stderr.log", "run.json", "dptune-run.json"].contains(&f),
                "{name}: {}",
                p.display()
            );
        }
        let released_score = ran.json()["released"]["score"].as_f64();
        let mut private_numbers = Vec::new();
        for r in j["runs"].as_array().unwrap() {
            let r = &r["record"];
            if let Some(p) = r["printed"].as_str() {
                private_numbers.push(p.to_string());
            }
            let told = r["released_score"].as_f64().unwrap();
            if Some(told) != released_score {
                private_numbers.push(told.to_string());
            }
            private_numbers.push(format!("{:.1}", r["seconds"].as_f64().unwrap()));
        }
        for r in j["shard_runs"].as_array().unwrap() {
            if let Some(x) = r["record"]["raw_score"].as_f64() {
                private_numbers.push(format!("{x:.6}"));
            }
        }
        for (what, text) in &published {
            for n in &private_numbers {
                assert!(
                    !(n.len() > 3 && holds_number(text, n)),
                    "{name}: {what} holds the private {n}:\n{text}"
                );
            }
            assert!(!text.contains("Released: run"), "{name}: {what}");
            assert!(!text.contains("PRIVATE"), "{name}: {what}");
            assert!(!text.contains("Took"), "{name}: {what}");
        }
        let json: Value = serde_json::from_str(&release).unwrap();
        assert_eq!(json["released"]["run"], Value::Null, "{name}");
        assert_eq!(json["released"]["failure"], Value::Null, "{name}");
        let secret_count = matches!(name, "papernot-steinke" | "liu-talwar" | "threshold");
        if secret_count {
            assert_eq!(json["runs"], Value::Null, "{name}");
            assert!(
                !ran.stdout.lines().any(|l| l.starts_with("  runs: ")
                    && l[8..].starts_with(|c: char| c.is_ascii_digit())),
                "{name}: {}",
                ran.stdout
            );
            assert!(ran.stdout.contains("runs: not published"), "{name}");
        } else {
            assert!(
                json["runs"].as_u64().is_some(),
                "{name}: a count the file fixes"
            );
        }
        // --show-private prints what is private, marked.
        let shown = tune_over(script, &file, &out, &["--show-private"], &[]);
        assert!(
            shown.stdout.contains("PRIVATE (--show-private)"),
            "{name}: {}{}",
            shown.stdout,
            shown.stderr
        );
        if secret_count && name != "threshold" {
            assert!(
                shown.stdout.contains("  runs: "),
                "{name}: {}",
                shown.stdout
            );
        }
    }
}

/// The fixture's naive search of 6 killed after 3 runs: its out folder.
fn killed_search(dir: &Path, name: &str) -> (PathBuf, PathBuf) {
    let file = search_file(dir, &[(FIXTURE_TUNER, "name = \"naive\"\ncandidates = 6")]);
    let out = dir.join(name);
    let killed = tune(&file, &out, &["--stop-after-runs", "3"], &[]);
    assert_eq!(killed.code, 3, "{}", killed.stderr);
    (file, out)
}

/// The journal's records sealed again as dptune seals them (the SHA-256 of the record's JSON
/// keyed by the fingerprint and seed): a forger who recomputes the checksums.
fn reseal(j: &mut Value) {
    use sha2::{Digest, Sha256};
    let key = format!(
        "{}\0{}\0",
        serde_json::to_string(&j["fingerprint"]).unwrap(),
        j["seed"].as_u64().unwrap()
    );
    let sha = |v: &Value| {
        Sha256::digest(format!("{key}{}", serde_json::to_string(v).unwrap()).as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    };
    let s = sha(&j["state"]["record"]);
    j["state"]["sha256"] = s.into();
    for list in ["runs", "shard_runs", "point_runs"] {
        for r in j[list].as_array_mut().unwrap() {
            let s = sha(&r["record"]);
            r["sha256"] = s.into();
        }
    }
}

/// A damaged or edited journal is refused before anything runs, naming what differs, whether
/// or not the forger recomputed its checksums: a count raised (K = 6 → 40), a best run
/// edited, a record duplicated or removed, a counter reset, a score changed by one ulp, an
/// older dptune's journal. The untouched journal resumes.
#[test]
fn a_tampered_journal_is_refused_and_spends_nothing() {
    let dir = temp_dir("tune-tamper");
    type Edit = fn(&mut Value);
    let edits: [(&str, Edit, &str); 7] = [
        (
            "k",
            |j| j["state"]["record"]["session"]["best-of"]["k"] = 40.into(),
            "best-of.k",
        ),
        (
            "best",
            |j| j["state"]["record"]["session"]["best-of"]["best"][2] = 0.999.into(),
            "best-of.best",
        ),
        (
            "duplicate",
            |j| {
                let r = j["runs"][0].clone();
                j["runs"].as_array_mut().unwrap().push(r);
            },
            "on record twice",
        ),
        (
            "removed",
            |j| {
                j["runs"].as_array_mut().unwrap().remove(1);
            },
            "do not give",
        ),
        (
            "counter",
            |j| {
                let p = &mut j["state"]["record"]["session"]["best-of"]["progress"];
                p["asked"] = 0.into();
                p["told"] = 0.into();
            },
            "best-of.progress",
        ),
        (
            "ulp",
            |j| {
                let r = &mut j["runs"][2]["record"];
                let x = r["released_score"].as_f64().unwrap();
                r["released_score"] = f64::from_bits(x.to_bits() + 1).into();
            },
            "does not agree",
        ),
        (
            "raw",
            |j| {
                let r = &mut j["runs"][0]["record"];
                let x = r["raw_score"].as_f64().unwrap();
                r["raw_score"] = (x * 0.5).into();
            },
            "does not agree",
        ),
    ];
    for (name, edit, says) in edits {
        let (file, out) = killed_search(&dir, name);
        let path = out.join("private/journal.json");
        let mut j = journal(&out);
        edit(&mut j);
        // Edited without the checksums: damaged.
        std::fs::write(&path, serde_json::to_string(&j).unwrap()).unwrap();
        let count = dir.join(format!("{name}-count"));
        let env = [("TUNE_COUNT", count.to_str().unwrap())];
        let ran = tune(&file, &out, &[], &env);
        assert_eq!(ran.code, 2, "{name}: {}", ran.stdout);
        // A removed or duplicated record keeps every checksum; its journal does not re-derive.
        assert!(
            ran.stderr.contains("checksum") || ran.stderr.contains(says),
            "{name}: {}",
            ran.stderr
        );
        // Resealed: refused by re-deriving it.
        reseal(&mut j);
        std::fs::write(&path, serde_json::to_string(&j).unwrap()).unwrap();
        let ran = tune(&file, &out, &[], &env);
        assert_eq!(ran.code, 2, "{name}: {}", ran.stdout);
        assert!(
            ran.stderr.contains("not what its own records give") && ran.stderr.contains(says),
            "{name}: {}",
            ran.stderr
        );
        assert!(!count.exists(), "{name}: nothing ran");
    }
    // The untouched journal, resealed by the same rule, resumes: the rule is the one dptune uses.
    let (file, out) = killed_search(&dir, "untouched");
    let mut j = journal(&out);
    reseal(&mut j);
    std::fs::write(
        out.join("private/journal.json"),
        serde_json::to_string(&j).unwrap(),
    )
    .unwrap();
    let ran = tune(&file, &out, &[], &[]);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    // An older dptune's journal (in the folder itself, no checksums) is not resumed.
    let old = dir.join("old");
    std::fs::create_dir_all(&old).unwrap();
    std::fs::write(old.join("journal.json"), "{}").unwrap();
    let ran = tune(&file, &old, &[], &[]);
    assert_eq!(ran.code, 2);
    assert!(ran.stderr.contains("older dptune"), "{}", ran.stderr);
}

/// A run's forked children die with it, also one that left its process group; a SIGKILLed
/// dptune takes its runs with it, and a resume stops what they left before anything runs.
#[test]
fn runs_die_with_dptune() {
    let dir = temp_dir("tune-processes");
    let file = search_file(&dir, &[(FIXTURE_TUNER, "name = \"naive\"\ncandidates = 2")]);
    let alive = |p: &str| {
        let p: libc::pid_t = p.parse().unwrap();
        // A zombie is gone for this purpose; signal 0 only asks whether the process exists.
        let zombie = std::fs::read_to_string(format!("/proc/{p}/stat"))
            .is_ok_and(|s| s.rsplit(')').next().unwrap().trim_start().starts_with('Z'));
        (unsafe { libc::kill(p, 0) } == 0) && !zombie
    };
    for mode in ["fork", "escape"] {
        let pids = dir.join(format!("{mode}-pids"));
        let ran = tune(
            &file,
            &dir.join(mode),
            &[],
            &[("TUNE_MODE", mode), ("TUNE_PIDS", pids.to_str().unwrap())],
        );
        assert_eq!(ran.code, 0, "{mode}: {}", ran.stderr);
        let all = lines(&pids);
        assert_eq!(all.len(), 4, "{mode}: two runs, each with a child: {all:?}");
        for p in &all {
            assert!(!alive(p), "{mode}: {p} outlived its run");
        }
    }
    // SIGKILL: the runs (each a shell sleeping 30 s in a child) go with dptune.
    let (pids, out) = (dir.join("kill-pids"), dir.join("killed"));
    let mut child = slow_search(&file, &out, &pids).spawn().unwrap();
    let start = std::time::Instant::now();
    while lines(&pids).len() < 2 {
        assert!(start.elapsed().as_secs() < 20, "the runs did not start");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let start = std::time::Instant::now();
    while lines(&pids).iter().any(|p| alive(p)) {
        assert!(start.elapsed().as_secs() < 10, "a run outlived dptune");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // What the shells left (their `sleep`) is stopped by the resume, before anything runs.
    let leftovers = |out: &Path| {
        let prefix = format!(
            "DPTUNE_OUTPUT_DIR={}",
            out.canonicalize().unwrap().display()
        );
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter(|e| {
                e.file_name()
                    .to_str()
                    .is_some_and(|n| n.parse::<u32>().is_ok())
            })
            .filter(|e| {
                std::fs::read(e.path().join("environ")).is_ok_and(|env| {
                    env.split(|&b| b == 0)
                        .any(|v| v.starts_with(prefix.as_bytes()))
                }) && alive(e.file_name().to_str().unwrap())
            })
            .count()
    };
    assert!(leftovers(&out) > 0, "the test needs a leftover to stop");
    let ran = tune(&file, &out, &[], &[]);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    assert_eq!(leftovers(&out), 0);
}

/// Small things of the release: an --out that is a file is named; release.json is written
/// over a symbolic link, not through it; a changed script is another search; a released run
/// that wrote its raw score into its outputs is warned about.
#[test]
fn the_release_is_written_safely_and_warned_about() {
    let dir = temp_dir("tune-release-safety");
    let file = search_file(&dir, &[(FIXTURE_TUNER, "name = \"naive\"\ncandidates = 3")]);
    let not_a_folder = dir.join("file.txt");
    std::fs::write(&not_a_folder, "mine").unwrap();
    let ran = tune(&file, &not_a_folder, &[], &[]);
    assert_eq!(ran.code, 2);
    assert!(
        ran.stderr.contains("is a file, not a folder"),
        "{}",
        ran.stderr
    );
    assert_eq!(std::fs::read_to_string(&not_a_folder).unwrap(), "mine");

    let out = dir.join("out");
    assert_eq!(tune(&file, &out, &[], &[]).code, 0);
    let users = dir.join("users-file.txt");
    std::fs::write(&users, "the user's").unwrap();
    std::fs::remove_file(out.join("release.json")).unwrap();
    std::os::unix::fs::symlink(&users, out.join("release.json")).unwrap();
    let again = tune(&file, &out, &[], &[]);
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert_eq!(std::fs::read_to_string(&users).unwrap(), "the user's");
    assert!(!std::fs::symlink_metadata(out.join("release.json"))
        .unwrap()
        .file_type()
        .is_symlink());

    // The same search over an edited copy of the script is another search.
    let script = dir.join("train.sh");
    std::fs::copy(fixture("train.sh"), &script).unwrap();
    let run_script = |out: &Path, env: &[(&str, &str)]| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_dptune"));
        cmd.arg("tune")
            .arg(&file)
            .arg("--out")
            .arg(out)
            .arg("--quiet")
            .arg("--")
            .arg("sh")
            .arg(&script);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let o = cmd.output().unwrap();
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stdout).into_owned(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let mine = dir.join("mine");
    assert_eq!(run_script(&mine, &[]).0, Some(0));
    std::fs::write(
        &script,
        std::fs::read_to_string(&script).unwrap() + "\n# fixed\n",
    )
    .unwrap();
    let (code, _, err) = run_script(&mine, &[]);
    assert_eq!(code, Some(2));
    assert!(err.contains("script"), "{err}");

    let (code, stdout, err) = run_script(&dir.join("leak"), &[("TUNE_MODE", "leak")]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        stdout.contains("metrics.txt contains the released run's raw score"),
        "{stdout}"
    );
}

// ---------------------------------------------------------------------------------------------
// Issue 61 (search files): failures that do not depend on one record, laws that cannot be
// drawn, and what a new user's search file gets wrong.
// ---------------------------------------------------------------------------------------------

/// The fixture search file's text with `edits` (from, to) applied, planned as `search.toml`.
fn plan_of(edits: &[(&str, &str)]) -> dptune::Result<dptune::tune::file::Plan> {
    let mut text = std::fs::read_to_string(fixture("search.toml")).unwrap();
    for (from, to) in edits {
        assert!(text.contains(from), "{from}");
        text = text.replace(from, to);
    }
    dptune::tune::file::plan("search.toml", &text)
}

fn plan_error(edits: &[(&str, &str)]) -> String {
    match plan_of(edits) {
        Ok(_) => panic!("{edits:?} was accepted"),
        Err(e) => e.to_string(),
    }
}

/// One validation user's loss of 1e308 (finite) neither aborts DP-GIBO after runs on private
/// data nor moves it more than the end of the users' loss range (by default [-1e6, 1e6]): the
/// release is that of the user reporting 1e6. A declared range clamps the same way, and
/// failed_loss must lie in it.
#[test]
fn dp_gibo_clamps_every_reported_loss_into_the_users_range() {
    let dir = temp_dir("tune-gibo-huge");
    let released = |file: &Path, out: &str, loss: &str| {
        let ran = tune_losses(file, &dir.join(out), &[], &[("TUNE_HUGE", loss)]);
        assert_eq!(ran.code, 0, "{loss}: {}", ran.stderr);
        ran.json()["released"].clone()
    };
    let file = gibo_file(&dir, &[]);
    assert_eq!(
        released(&file, "huge", "1e308"),
        released(&file, "end", "1e6")
    );
    let declared = gibo_file(
        &dir,
        &[("failed_loss = 1", "failed_loss = 1\nloss_range = [0, 2]")],
    );
    assert_eq!(
        released(&declared, "a", "1e308"),
        released(&declared, "b", "2")
    );
    for (edit, key, says) in [
        (
            "failed_loss = 1\nloss_range = [2, 1]",
            "users.loss_range",
            "lo < hi",
        ),
        (
            "failed_loss = 5\nloss_range = [0, 2]",
            "users.failed_loss",
            "[0, 2]",
        ),
    ] {
        let file = gibo_file(&dir, &[("failed_loss = 1", edit)]);
        let ran = tune_losses(&file, &dir.join("bad"), &[], &[]);
        assert_eq!(ran.code, 2, "{edit}: {}", ran.stderr);
        assert!(
            ran.stderr.contains(key) && ran.stderr.contains(says),
            "{edit}: {}",
            ran.stderr
        );
    }
}

/// A mean whose draws of K no u64 holds (1e300 drew K = 0 from a law on {1, 2, …}) is refused
/// before any run, naming `tuner.mean` and the largest mean taken; that one is taken.
#[test]
fn a_mean_whose_runs_cannot_be_drawn_is_refused_naming_the_largest() {
    let dir = temp_dir("tune-huge-mean");
    let count = dir.join("count");
    let env = [("TUNE_COUNT", count.to_str().unwrap())];
    for (tuner, largest) in [
        (
            "name = \"papernot-steinke\"\ndist = \"geometric\"",
            "9.007e15",
        ),
        (
            "name = \"papernot-steinke\"\ndist = \"logarithmic\"",
            "2.451e14",
        ),
        ("name = \"liu-talwar\"", "9.007e15"),
    ] {
        let file = search_file(&dir, &[(FIXTURE_TUNER, &format!("{tuner}\nmean = 1e300"))]);
        let ran = tune(&file, &dir.join("out"), &[], &env);
        assert_eq!(ran.code, 2, "{tuner}: {}", ran.stderr);
        assert!(
            ran.stderr.contains("tuner.mean") && ran.stderr.contains(largest),
            "{tuner}: {}",
            ran.stderr
        );
        assert!(!count.exists(), "no run was made");
        let at_most = &format!("{tuner}\nmean = {largest}");
        assert!(plan_of(&[(FIXTURE_TUNER, at_most)]).is_ok(), "{at_most}");
    }
}

/// Propose-test's public grid has distinct candidates: a choice axis exactly its choices, an
/// integer axis at most its integers (a grid of 3 on a two-way choice gave sgd, momentum,
/// momentum).
#[test]
fn propose_tests_grid_has_distinct_candidates() {
    use dptune::tune::space::Value;
    let plan = plan_of(&[
        (
            FIXTURE_TUNER,
            "name = \"propose-test\"\nshards = 4\neps0 = 0.5\ngrid = 3",
        ),
        (
            "clip = { uniform = [0.1, 4] }",
            "opt = { choice = [\"sgd\", \"momentum\"] }\nn = { integer = [1, 2] }",
        ),
    ])
    .unwrap();
    let Some(Space::Finite(points)) = plan.declared.as_ref().map(|d| &d.space) else {
        panic!("propose-test's candidates are a finite list")
    };
    let values: Vec<Vec<Value>> = points
        .iter()
        .map(|p| {
            plan.space
                .values(p)
                .unwrap()
                .into_iter()
                .map(|(_, v)| v)
                .collect()
        })
        .collect();
    assert_eq!(values.len(), 3 * 2 * 2, "{values:?}");
    for (i, v) in values.iter().enumerate() {
        assert!(!values[..i].contains(v), "{v:?} twice in {values:?}");
    }
    let opts: Vec<&Value> = values.iter().map(|v| &v[2]).collect();
    assert!(opts.contains(&&Value::Text("sgd".into())));
    assert!(opts.contains(&&Value::Text("momentum".into())));
}

/// A hyperparameter searched that changes one run's privacy is refused, saying why and where
/// to fix it; without [run] (a non-private baseline) it may be searched.
#[test]
fn a_searched_knob_of_a_runs_privacy_is_refused() {
    for key in [
        "epochs",
        "noise_multiplier",
        "lot_size",
        "sampling_rate",
        "steps",
        "batch_size",
        "sigma",
    ] {
        let e = plan_error(&[(
            "clip = { uniform = [0.1, 4] }",
            &format!("{key} = {{ integer = [1, 8] }}"),
        )]);
        assert!(
            e.contains(&format!("space.{key}"))
                && e.contains("changes one run's privacy")
                && e.contains("[run]"),
            "{key}: {e}"
        );
    }
    let run = "[run]\nkind = \"dp-sgd\"\ndata_size = 30000\nlot_size = 256\nepochs = 2\nnoise_multiplier = 6.0";
    let baseline = plan_of(&[
        (FIXTURE_TUNER, "name = \"random-search\"\ncandidates = 3"),
        ("[privacy]\ndelta = 1e-5", ""),
        (
            "clip = { uniform = [0.1, 4] }",
            "epochs = { integer = [1, 8] }",
        ),
        ("records = 5000\nnoise = 10.0", "public = true"),
        (run, ""),
    ]);
    assert!(baseline.is_ok(), "{:?}", baseline.err());
}

/// A budget no value of the calibrated knob meets says which part of the guarantee already
/// exceeds it and what to change.
#[test]
fn an_infeasible_budget_names_the_part_that_exceeds_it() {
    let budget = ("delta = 1e-5", "delta = 1e-5\nepsilon = 0.05");
    for (knob, part, fix) in [
        (
            (
                "noise_multiplier = 6.0",
                "noise_multiplier = \"calibrated\"",
            ),
            "the score's release",
            "score.noise",
        ),
        (
            ("noise = 10.0", "noise = \"calibrated\""),
            "one run's training",
            "run.noise_multiplier",
        ),
        (
            ("mean = 6", "mean = \"calibrated\""),
            "one run (its training and its score's release)",
            "score.noise",
        ),
    ] {
        let e = plan_error(&[budget, knob]);
        assert!(
            e.contains("cannot meet the budget ε = 0.05") && e.contains(part) && e.contains(fix),
            "{}: {e}",
            knob.1
        );
    }
}

/// A bad privacy.delta is named with its line and the valid range, never by the table of the
/// tuner that would refuse it later.
#[test]
fn a_bad_delta_is_named_privacy_delta_with_its_line_and_range() {
    for delta in ["1", "0", "-1", "2"] {
        let e = plan_error(&[("delta = 1e-5", &format!("delta = {delta}"))]);
        assert!(
            e.contains("search.toml:14:") && e.contains("privacy.delta") && e.contains("0 < δ < 1"),
            "{delta}: {e}"
        );
    }
}

/// A seed in the file lets one recompute a private search's noise; a non-private baseline has
/// none, and its words say nothing of noise.
#[test]
fn a_baselines_seed_is_not_said_to_recompute_noise() {
    let private = plan_of(&[]).unwrap().seed_words().unwrap();
    assert!(private.contains("recompute the noise"), "{private}");
    let baseline = plan_of(&[
        (FIXTURE_TUNER, "name = \"random-search\"\ncandidates = 3"),
        ("[privacy]\ndelta = 1e-5", ""),
        (
            "[run]\nkind = \"dp-sgd\"\ndata_size = 30000\nlot_size = 256\nepochs = 2\nnoise_multiplier = 6.0",
            "",
        ),
        ("records = 5000\nnoise = 10.0", "public = true"),
    ])
    .unwrap();
    let words = baseline.seed_words().unwrap();
    assert!(
        words.contains("seed 7") && !words.contains("noise"),
        "{words}"
    );
}

/// A tuner added as one file and one registry line (`one-shot`, src/tuners/one_shot.rs) is
/// driven by the harness and by `dptune tune` with no edit elsewhere (python/tests/
/// test_tuners.py drives it from Python): its statement is the library's guarantee, its journal
/// holds its own session kind, and the harness's results name it.
#[test]
fn a_tuner_added_by_one_file_is_driven_by_the_harness_and_by_dptune_tune() {
    let dir = temp_dir("tune-one-shot");
    let file = search_file(&dir, &[(FIXTURE_TUNER, "name = \"one-shot\"")]);
    let out = dir.join("out");
    let count = dir.join("count");
    let ran = tune(&file, &out, &[], &[("TUNE_COUNT", count.to_str().unwrap())]);
    assert_eq!(ran.code, 0, "{}\n{}", ran.stdout, ran.stderr);
    let g = dptune::tuners::build("one-shot", &toml::Table::new())
        .unwrap()
        .guarantee(
            &fixture_declarations(None),
            1e-5,
            &Accountant::new(Orders::Continuous, Conversion::Cks),
        )
        .unwrap();
    let json = ran.json();
    assert_eq!(json["privacy"]["epsilon"].as_f64(), Some(g.epsilon));
    assert_eq!(
        json["privacy"]["theorem"].as_str(),
        Some(g.theorem.as_str())
    );
    assert_eq!(lines(&count).len(), 1, "one run");
    assert!(journal(&out)["state"]["record"]["session"]["one-shot"].is_object());
    assert_eq!(json["released"]["kind"].as_str(), Some("run"));

    let sims = dir.join("one-shot.toml");
    std::fs::write(
        &sims,
        format!(
            r#"
name = "one-shot"
kind = "tuning"
seed = 7
seeds = 3
delta = 1e-6
[budget]
epsilons = [1]
[workload]
kind = "synthetic-gp"
dims = [1]
features = 32
candidates = 20
sensitivity = 0.01
{privacy}
[[tuners]]
tuner = "one-shot"
[[tuners]]
tuner = "naive"
"#,
            privacy = common::PRIVACY_TABLE
        ),
    )
    .unwrap();
    let table = common::run_file(&sims, dptune::sim::Profile::Paper, &dir.join("sims"), 2);
    let tuners = table.str("tuner").unwrap();
    let runs = table.u64("runs").unwrap();
    assert_eq!(tuners.iter().filter(|t| *t == "one-shot").count(), 3);
    assert!(tuners
        .iter()
        .zip(runs)
        .all(|(t, r)| t != "one-shot" || *r == 1));
}
