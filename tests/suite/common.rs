//! Helpers the integration tests share: a fresh temporary folder, and an experiment file run
//! through the harness.
#![allow(dead_code)] // each test binary uses its own subset

use dptune::sim::table::Table;
use dptune::sim::{load, run, Profile, RunOptions, RunStatus, Shard};
use std::path::{Path, PathBuf};

/// An empty folder `dptune-<tag>-<pid>` under the system's temporary folder, removed when the
/// returned guard is dropped (a test leaves nothing behind, passed or failed).
pub fn temp_dir(tag: &str) -> TempDir {
    let d = std::env::temp_dir().join(format!("dptune-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    TempDir(d)
}

/// A temporary folder that removes itself when dropped; it derefs to its path.
pub struct TempDir(PathBuf);

impl std::ops::Deref for TempDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for TempDir {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Harness options: `threads` threads, shard `shard`, results under `out`, no progress bar.
pub fn options(profile: Profile, out: &Path, threads: usize, shard: Shard) -> RunOptions {
    RunOptions {
        profile,
        threads: Some(threads),
        shard,
        out: out.to_path_buf(),
        progress: false,
        rerun_stale: false,
        stop_after_units: None,
        stop_after_records: None,
    }
}

/// Runs `file` at `profile` into `out` (one shard) and returns its result table.
pub fn run_file(file: &Path, profile: Profile, out: &Path, threads: usize) -> Table {
    let exp = load(file, profile).unwrap();
    match run(&exp, &options(profile, out, threads, Shard::ALL)).unwrap() {
        RunStatus::Complete { results, .. } => Table::read_parquet(&results).unwrap(),
        other => panic!("incomplete: {other:?}"),
    }
}

/// [`run_file`], then draws its plots and tables.
pub fn run_and_report(file: &Path, profile: Profile, out: &Path, threads: usize) -> Table {
    let table = run_file(file, profile, out, threads);
    let exp = load(file, profile).unwrap();
    dptune::sim::report(&exp, out).unwrap();
    table
}

/// The shipped experiment files: `sims/*.toml` and the GPU-sized `sims/gpu/*.toml`, sorted.
pub fn shipped_experiment_files() -> Vec<std::path::PathBuf> {
    let mut files: Vec<std::path::PathBuf> = ["sims", "sims/gpu"]
        .iter()
        .flat_map(|d| std::fs::read_dir(d).unwrap())
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    files
}

/// One run's Rényi curve, from the event its workload declares (the default orders).
pub fn run_curve(t: &dyn dptune::workloads::PrivateTraining) -> dptune::accounting::RdpCurve {
    dptune::accounting::rdp_events::curve(t.run_event(), &Default::default()).unwrap()
}

/// The privacy table a tuning file declares (as the sims files do), for the tests' tiny files.
pub const PRIVACY_TABLE: &str = "[[tables]]
name = \"privacy\"
table = \"cells.parquet\"
facet = \"variant\"
rows = \"label\"
columns = \"target_epsilon\"
cell = \"{epsilon:3up} / σ={noise:4} / {runs:1}\"
caption = \"guarantee ε (rounded up), noise σ of each run, mean runs\"";
