//! The simulation harness: experiment files in, tidy parquet, plots and tables out.
//!
//! One runner for every study kind (`run`): the study lists its units; each unit's rows are
//! written as one checksummed parquet part under `<out>/<name>/parts/` (atomically), units whose
//! part is already there and intact are skipped (a killed run resumes and loses no finished
//! unit), `--shard I/N` runs the units i with i mod N = I − 1, and once every unit of every
//! shard is present the parts are merged in canonical order into the study's table. A lock
//! keeps runs of different configurations out of one folder, the manifest records what was
//! written, and results of an earlier configuration are moved aside, never deleted
//! (`store.rs`). Results are identical for any thread count, sharding and
//! `OPENBLAS_NUM_THREADS`, except timing columns (`wall_ms`).
//!
//! Layout (no import circle): `study` (the trait) and `fields` (typed TOML access) are leaves;
//! `studies/` holds one file per kind and the registry; `experiment` loads a file through the
//! registry; this module runs it; `report` and `plot` are shared helpers of the studies.

pub mod experiment;
pub mod fields;
pub mod plot;
pub mod progress;
pub mod report;
pub mod store;
pub mod studies;
pub mod study;
pub mod table;

pub use experiment::{load, Experiment};
pub use study::{Header, Profile, Study};

use crate::error::{Error, Result};
use progress::Progress;
use rayon::prelude::*;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use store::{Lock, Manifest, Parts};
use table::Table;

/// Which part of the units this process runs: units i with i mod count = index − 1.
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
    /// Test hook: exit the process abruptly after this many units (simulates a kill).
    pub stop_after_units: Option<u64>,
}

/// What a run left behind.
#[derive(Clone, Debug, PartialEq)]
pub enum RunStatus {
    /// Every unit is done and merged into `results`; `derived` are the tables made from it.
    Complete {
        results: PathBuf,
        derived: Vec<PathBuf>,
        rows: usize,
    },
    /// This shard is done; other shards' units are still missing.
    Partial { present: usize, total: usize },
}

/// The results folder of `exp` under `out`.
pub fn results_dir(out: &Path, exp: &Experiment) -> PathBuf {
    out.join(&exp.name)
}

/// Runs (or resumes) the experiment.
pub fn run(exp: &Experiment, opts: &RunOptions) -> Result<RunStatus> {
    single_threaded_blas();
    let dir = results_dir(&opts.out, exp);
    let _lock = Lock::acquire(&dir, &store::hash_text(exp.config_hash))?;
    let mut manifest = store::prepare(&dir, exp)?;
    let study = exp.study.as_ref();
    let output = study.output();
    let mut tables = vec![output];
    tables.extend(study.derived());
    if manifest.intact(&dir, &tables) {
        return complete(&dir, output, &tables);
    }
    let units = study.units();
    if let Some(dup) = units
        .iter()
        .enumerate()
        .find_map(|(i, u)| units[..i].contains(u).then_some(u))
    {
        return Err(Error::Experiment {
            file: exp.file.display().to_string(),
            at: String::new(),
            field: "(units)".into(),
            reason: format!("two units of this study are both `{dup}`: make the lists distinct"),
        });
    }
    let parts = Parts::open(&dir)?;
    let pending: Vec<usize> = (0..units.len())
        .filter(|&i| opts.shard.owns(i) && parts.find(&units[i]).is_none())
        .collect();
    let mut builder = rayon::ThreadPoolBuilder::new();
    if let Some(n) = opts.threads {
        builder = builder.num_threads(n);
    }
    let pool = builder
        .build()
        .map_err(|e| Error::Infeasible(format!("thread pool: {e}")))?;
    let progress = Progress::new(&exp.name, pending.len() as u64, opts.progress);
    let written = AtomicU64::new(0);
    pool.install(|| {
        pending.par_iter().try_for_each(|&i| -> Result<()> {
            let rows = study.run_unit(&exp.name, i).map_err(|e| {
                Error::Infeasible(format!(
                    "{}: unit `{}`: {e}",
                    exp.file.display(),
                    units[i]
                ))
            })?;
            parts.write(&units[i], &rows)?;
            progress.tick();
            let n = written.fetch_add(1, Ordering::SeqCst) + 1;
            if opts.stop_after_units.is_some_and(|stop| n >= stop) {
                std::process::exit(137);
            }
            Ok(())
        })
    })?;
    let found: Vec<Option<PathBuf>> = units.iter().map(|u| parts.find(u)).collect();
    let present = found.iter().filter(|p| p.is_some()).count();
    if present < units.len() {
        return Ok(RunStatus::Partial {
            present,
            total: units.len(),
        });
    }
    let mut all = Table::default();
    for p in found.iter().flatten() {
        all.append(&Table::read_parquet(p)?)?;
    }
    all.write_parquet(&dir.join(output))?;
    for (name, t) in pool.install(|| study.derive(&exp.name, &all))? {
        t.write_parquet(&dir.join(name))?;
    }
    manifest.complete(&dir, &tables);
    manifest.write(&dir)?;
    complete(&dir, output, &tables)
}

fn complete(dir: &Path, output: &str, tables: &[&str]) -> Result<RunStatus> {
    let results = dir.join(output);
    let rows = Table::read_parquet(&results)?.height();
    Ok(RunStatus::Complete {
        results,
        derived: tables[1..].iter().map(|t| dir.join(t)).collect(),
        rows,
    })
}

/// Draws the plots and tables of `exp` from its results under `out`, after checking that they
/// are complete results of this very configuration; records the files in the manifest.
pub fn report(exp: &Experiment, out: &Path) -> Result<Vec<PathBuf>> {
    let dir = results_dir(out, exp);
    let hash = store::hash_text(exp.config_hash);
    let Some(mut manifest) = Manifest::read(&dir) else {
        return Err(Error::results(
            &dir,
            format!(
                "no results of `{}` here: run `dptune sim run {} --profile {}{}` first",
                exp.name,
                exp.file.display(),
                exp.profile.name(),
                out_flag(out)
            ),
        ));
    };
    if manifest.str("experiment") != Some(exp.name.as_str())
        || manifest.str("kind") != Some(exp.kind.name)
    {
        return Err(Error::results(
            &dir,
            format!(
                "holds results of `{}` (kind {}), not of {}",
                manifest.str("experiment").unwrap_or("?"),
                manifest.str("kind").unwrap_or("?"),
                exp.file.display()
            ),
        ));
    }
    if manifest.str("config_hash") != Some(hash.as_str()) {
        let theirs = manifest.str("profile").unwrap_or("?");
        let advice = if theirs != exp.profile.name() {
            format!("they were made with profile {theirs}: pass --profile {theirs}")
        } else {
            format!(
                "{} changed since they were made: run `dptune sim run` on it first",
                exp.file.display()
            )
        };
        return Err(Error::results(
            &dir,
            format!("these results are of another configuration ({advice})"),
        ));
    }
    let study = exp.study.as_ref();
    let mut tables = vec![study.output()];
    tables.extend(study.derived());
    if !manifest.intact(&dir, &tables) {
        return Err(Error::results(
            &dir,
            format!(
                "the results are incomplete or damaged: run `dptune sim run {} --profile {}{}` (it resumes)",
                exp.file.display(),
                exp.profile.name(),
                out_flag(out)
            ),
        ));
    }
    let files = study.report(&exp.header(), &dir)?;
    manifest.add_files(&dir, &files);
    manifest.write(&dir)?;
    Ok(files)
}

fn out_flag(out: &Path) -> String {
    if out == Path::new("results") {
        String::new()
    } else {
        format!(" --out {}", out.display())
    }
}

/// One OpenBLAS thread, set inside dptune: rayon supplies the parallelism, small factorisations
/// are faster single-threaded, and results must not depend on the caller's environment
/// (`OPENBLAS_NUM_THREADS` changed results at 1e-11 before this).
pub fn single_threaded_blas() {
    extern "C" {
        fn openblas_set_num_threads(n: std::os::raw::c_int);
    }
    // SAFETY: OpenBLAS's documented setter; it only stores the thread count.
    unsafe { openblas_set_num_threads(1) }
}
