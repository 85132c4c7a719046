//! The simulation harness: experiment files in, tidy parquet, plots and tables out.
//!
//! `run` executes one experiment file into `<out>/<name>/`:
//! * tuning experiments write one parquet part per cell under `parts/` (atomically: a hidden
//!   temporary file, then a rename), skip the cells whose part is already there (so a killed run
//!   resumes and loses no completed cell), and merge the parts in canonical cell order into
//!   `runs.parquet` once every cell of every shard is present;
//! * curve experiments write `curves.parquet`.
//!
//! `manifest.json` records the resolved configuration's hash: parts of another configuration
//! (another profile, an edited file) are discarded, never mixed in. Results are identical for
//! any thread count and any sharding, except the `wall_ms` column.

pub mod curves;
pub mod experiment;
pub mod gibo;
pub mod gp_ucb;
pub mod lipschitz;
pub mod lr_search;
pub mod plot;
pub mod progress;
pub mod propose_test;
pub mod report;
pub mod svm_alpha;
pub mod table;
pub mod tuning;

pub use experiment::{load, Experiment, Kind, Profile};

use crate::error::{Error, Result};
use progress::Progress;
use rayon::prelude::*;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use table::Table;

/// Which part of the cells this process runs: cells i with i mod count = index − 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    pub index: u64,
    pub count: u64,
}

impl Shard {
    pub const ALL: Shard = Shard { index: 1, count: 1 };

    /// Parses `I/N` with 1 ≤ I ≤ N.
    pub fn parse(s: &str) -> Result<Self> {
        let bad = || Error::invalid("shard", s, "I/N with 1 <= I <= N, e.g. 1/2");
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let (index, count) = (
            i.trim().parse().map_err(|_| bad())?,
            n.trim().parse().map_err(|_| bad())?,
        );
        if index < 1 || index > count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }

    fn owns(self, i: usize) -> bool {
        i as u64 % self.count == self.index - 1
    }
}

#[derive(Clone, Debug)]
pub struct RunOptions {
    pub profile: Profile,
    /// Worker threads (None: rayon's default, one per core).
    pub threads: Option<usize>,
    pub shard: Shard,
    /// Results go to `<out>/<experiment name>/`.
    pub out: PathBuf,
    pub progress: bool,
    /// Test hook: exit the process abruptly after this many cells (simulates a kill).
    pub stop_after_cells: Option<u64>,
}

/// What a run left behind.
#[derive(Clone, Debug, PartialEq)]
pub enum RunStatus {
    /// Every cell is done and merged into this file.
    Complete { results: PathBuf, rows: usize },
    /// This shard is done; other shards' cells are still missing.
    Partial { present: usize, total: usize },
}

/// The results folder of `exp` under `out`.
pub fn results_dir(out: &Path, exp: &Experiment) -> PathBuf {
    out.join(&exp.name)
}

/// Runs (or resumes) the experiment.
pub fn run(exp: &Experiment, opts: &RunOptions) -> Result<RunStatus> {
    let dir = results_dir(&opts.out, exp);
    prepare(exp, &dir)?;
    let mut builder = rayon::ThreadPoolBuilder::new();
    if let Some(n) = opts.threads {
        builder = builder.num_threads(n);
    }
    let pool = builder
        .build()
        .map_err(|e| Error::Infeasible(format!("thread pool: {e}")))?;
    match &exp.kind {
        Kind::Curves(c) => single_table(&dir.join("curves.parquet"), opts, &pool, || {
            curves::run(&exp.name, c)
        }),
        Kind::GpUcbBounds(b) => single_table(&dir.join("bounds.parquet"), opts, &pool, || {
            gp_ucb::run_bounds(&exp.name, b)
        }),
        Kind::GpUcbSuite(su) => single_table(&dir.join("suite.parquet"), opts, &pool, || {
            gp_ucb::run_suite(&exp.name, su, opts.progress)
        }),
        Kind::LipschitzGainSuite(su) => {
            single_table(&dir.join("suite.parquet"), opts, &pool, || {
                lipschitz::run(&exp.name, su, opts.progress)
            })
        }
        Kind::SvmAlphaSweep(sw) => single_table(&dir.join("sweep.parquet"), opts, &pool, || {
            svm_alpha::run(&exp.name, sw)
        }),
        Kind::LrSearch(l) => single_table(&dir.join("searches.parquet"), opts, &pool, || {
            lr_search::run(&exp.name, l, &dir, opts.progress)
        }),
        Kind::ProposeTestWalks(w) => single_table(&dir.join("walks.parquet"), opts, &pool, || {
            propose_test::run_walks(&exp.name, w)
        }),
        Kind::ProposeTestBudgets(b) => {
            single_table(&dir.join("budgets.parquet"), opts, &pool, || {
                propose_test::run_budgets(&exp.name, b)
            })
        }
        Kind::GiboPaths(p) => single_table(&dir.join("iterations.parquet"), opts, &pool, || {
            gibo::run_paths(&exp.name, p, opts.progress)
        }),
        Kind::Tuning(t) => {
            let cells = tuning::cells(t);
            let parts = dir.join("parts");
            std::fs::create_dir_all(&parts).map_err(|e| Error::io(&parts, e))?;
            remove_stale_temporaries(&parts);
            let part = |c: &tuning::Cell| parts.join(format!("{:016x}.parquet", c.id));
            let complete = |c: &tuning::Cell| {
                Table::read_parquet(&part(c)).is_ok_and(|rows| rows.height() as u64 == t.seeds)
            };
            let pending: Vec<&tuning::Cell> = cells
                .iter()
                .enumerate()
                .filter(|(i, c)| opts.shard.owns(*i) && !complete(c))
                .map(|(_, c)| c)
                .collect();
            let progress = Progress::new(&exp.name, pending.len() as u64, opts.progress);
            let written = AtomicU64::new(0);
            pool.install(|| {
                pending.par_iter().try_for_each(|c| -> Result<()> {
                    let rows = tuning::run_cell(&exp.name, t, c)?;
                    rows.write_parquet(&part(c))?;
                    progress.tick();
                    let n = written.fetch_add(1, Ordering::SeqCst) + 1;
                    if opts.stop_after_cells.is_some_and(|stop| n >= stop) {
                        std::process::exit(137);
                    }
                    Ok(())
                })
            })?;
            let present = cells.iter().filter(|c| complete(c)).count();
            if present < cells.len() {
                return Ok(RunStatus::Partial {
                    present,
                    total: cells.len(),
                });
            }
            let mut all = Table::default();
            for c in &cells {
                all.append(&Table::read_parquet(&part(c))?)?;
            }
            let path = dir.join("runs.parquet");
            all.write_parquet(&path)?;
            Ok(RunStatus::Complete {
                results: path,
                rows: all.height(),
            })
        }
    }
}

/// An experiment whose results are one table, computed whole by the first shard (these are
/// quick or closed-form; only tuning experiments are split into resumable cells).
fn single_table(
    path: &Path,
    opts: &RunOptions,
    pool: &rayon::ThreadPool,
    compute: impl FnOnce() -> Result<Table> + Send,
) -> Result<RunStatus> {
    if opts.shard.index == 1 && Table::read_parquet(path).is_err() {
        let table = pool.install(compute)?;
        table.write_parquet(path)?;
    }
    match Table::read_parquet(path) {
        Ok(t) => Ok(RunStatus::Complete {
            results: path.to_path_buf(),
            rows: t.height(),
        }),
        Err(_) => Ok(RunStatus::Partial {
            present: 0,
            total: 1,
        }),
    }
}

/// Writes the manifest; results of another configuration in `dir` are removed first.
fn prepare(exp: &Experiment, dir: &Path) -> Result<()> {
    let manifest = dir.join("manifest.json");
    let hash = format!("{:016x}", exp.config_hash);
    let previous = std::fs::read_to_string(&manifest)
        .ok()
        .and_then(|s| serde_json::from_str::<serde_json::Value>(&s).ok());
    let same = previous.as_ref().and_then(|m| m["config_hash"].as_str()) == Some(hash.as_str());
    if same {
        return Ok(());
    }
    if previous.is_some() {
        eprintln!(
            "{}: the configuration changed (or another profile ran here): discarding its old results",
            dir.display()
        );
    }
    for stale in [
        "parts",
        "runs.parquet",
        "curves.parquet",
        "bounds.parquet",
        "suite.parquet",
        "sweep.parquet",
        "searches.parquet",
        "walks.parquet",
        "budgets.parquet",
        "iterations.parquet",
    ] {
        let p = dir.join(stale);
        if p.is_dir() {
            std::fs::remove_dir_all(&p).map_err(|e| Error::io(&p, e))?;
        } else if p.exists() {
            std::fs::remove_file(&p).map_err(|e| Error::io(&p, e))?;
        }
    }
    let kind = exp.kind.name();
    let json = serde_json::json!({
        "experiment": exp.name,
        "title": exp.title,
        "file": exp.file.display().to_string(),
        "profile": exp.profile.name(),
        "kind": kind,
        "config_hash": hash,
        "dptune": env!("CARGO_PKG_VERSION"),
    });
    table::write_text(
        &manifest,
        &format!(
            "{}\n",
            serde_json::to_string_pretty(&json).unwrap_or_default()
        ),
    )
}

/// Removes temporary files left by killed processes (their pid is gone), never a live one's.
fn remove_stale_temporaries(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        let Some(rest) = name.strip_suffix(".tmp") else {
            continue;
        };
        let pid = rest.rsplit('.').next().unwrap_or("");
        let alive = !pid.is_empty() && Path::new("/proc").join(pid).exists();
        if !alive {
            let _ = std::fs::remove_file(e.path());
        }
    }
}
