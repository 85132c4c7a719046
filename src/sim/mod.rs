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

pub mod cell_template;
pub mod cells;
pub mod claims;
pub mod code_graph;
pub mod declarative;
pub mod experiment;
pub mod fields;
pub mod findings;
pub mod heatmap;
pub mod output;
pub mod plot;
pub(crate) mod plot_paths;
pub mod progress;
pub mod provenance;
pub mod report;
pub mod status;
pub mod store;
pub mod studies;
pub mod study;
pub mod table;
pub mod verify;

pub use experiment::{load, Experiment};

pub use study::{Profile, Study};

use crate::error::{Error, Result};
use progress::Progress;
use provenance::Code;
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
    /// Regenerate complete results made by other code (else they are kept and reported).
    pub rerun_stale: bool,
    /// Test hook: exit the process abruptly after this many units (simulates a kill).
    pub stop_after_units: Option<u64>,
    /// Test hook: exit the process abruptly after this many journal records (a kill in the
    /// middle of a unit that journals its progress).
    pub stop_after_records: Option<u64>,
}

/// What a run left behind.
#[derive(Clone, Debug, PartialEq)]
pub enum RunStatus {
    /// Every unit is done and merged into `results`; `derived` are the tables made from it.
    /// `stale`: why, when these are kept results made by other code (no `rerun_stale`).
    Complete {
        results: PathBuf,
        derived: Vec<PathBuf>,
        rows: usize,
        stale: Option<String>,
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
    let started = provenance::now();
    let dir = results_dir(&opts.out, exp);
    let code = Code::of(exp.kind.source);
    // Shards of one configuration and code may share the folder; nothing else may.
    let _lock = Lock::acquire(
        &dir,
        &format!("{}-{}", store::hash_text(exp.config_hash), code.fingerprint),
    )?;
    let study = exp.study.as_ref();
    let output = study.output();
    let mut tables = vec![output];
    tables.extend(study.derived());
    let store::Prepared {
        mut manifest,
        stale,
    } = store::prepare(&dir, exp, &code, &tables, opts.rerun_stale)?;
    if manifest.intact(&dir, &tables) {
        return complete(&dir, output, &tables, stale);
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
    let pool = builder.build().map_err(|e| Error::thread_pool(&e))?;
    let progress = Progress::new(&exp.name, pending.len() as u64, opts.progress);
    let written = AtomicU64::new(0);
    let run_one = |i: usize| -> Result<()> {
        {
            let at = |e: Error| e.context(&format!("{}: unit `{}`", exp.file.display(), units[i]));
            let unit_started = std::time::Instant::now();
            let mut journal = parts
                .journal(&units[i], opts.stop_after_records)
                .map_err(at)?;
            let rows = study
                .run_unit_journaled(&exp.name, i, &mut journal)
                .map_err(at)?;
            parts.write(&units[i], &rows)?;
            parts.record_time(&units[i], unit_started.elapsed().as_secs_f64())?;
            journal.remove();
            progress.tick();
            let n = written.fetch_add(1, Ordering::SeqCst) + 1;
            if opts.stop_after_units.is_some_and(|stop| n >= stop) {
                std::process::exit(137);
            }
            Ok(())
        }
    };
    // One feeder thread per pool thread hands the pool one unit at a time. Units handed to
    // the pool all at once (a `par_iter` over them) nest: a worker waiting inside a unit's own
    // parallel loop steals another unit and runs it on top of its stack, so with hundreds of
    // units the stack overflowed (DP-GIBO paths at 500 seeds). Fed this way, at most one unit
    // per thread waits in the pool, and the nesting stays that shallow.
    let next = std::sync::atomic::AtomicUsize::new(0);
    let failure: std::sync::Mutex<Option<Error>> = std::sync::Mutex::new(None);
    std::thread::scope(|scope| {
        for _ in 0..pool.current_num_threads() {
            scope.spawn(|| loop {
                if failure.lock().map_or(true, |f| f.is_some()) {
                    return;
                }
                let Some(&i) = pending.get(next.fetch_add(1, Ordering::SeqCst)) else {
                    return;
                };
                if let Err(e) = pool.install(|| run_one(i)) {
                    if let Ok(mut f) = failure.lock() {
                        f.get_or_insert(e);
                    }
                    return;
                }
            });
        }
    });
    if let Some(e) = failure.into_inner().ok().flatten() {
        return Err(e);
    }
    let shard = format!("{}/{}", opts.shard.index, opts.shard.count);
    let record = |parts: &Parts| {
        parts.record_run(&provenance::run_record(
            pool.current_num_threads(),
            &shard,
            started,
            pending.len(),
        ))
    };
    let found: Vec<Option<PathBuf>> = units.iter().map(|u| parts.find(u)).collect();
    let present = found.iter().filter(|p| p.is_some()).count();
    if present < units.len() {
        record(&parts)?;
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
    record(&parts)?;
    manifest.value["provenance"] = parts.provenance();
    manifest.complete(&dir, &tables);
    manifest.write(&dir)?;
    complete(&dir, output, &tables, None)
}

fn complete(dir: &Path, output: &str, tables: &[&str], stale: Option<String>) -> Result<RunStatus> {
    let results = dir.join(output);
    let rows = Table::read_parquet(&results)?.height();
    Ok(RunStatus::Complete {
        results,
        derived: tables[1..].iter().map(|t| dir.join(t)).collect(),
        rows,
        stale,
    })
}

/// Draws the plots and tables of `exp` from its results under `out`, after checking that they
/// are complete results of this very configuration; records the files in the manifest.
pub fn report(exp: &Experiment, out: &Path) -> Result<Vec<PathBuf>> {
    let dir = results_dir(out, exp);
    let hash = store::hash_text(exp.config_hash);
    let Some(mut manifest) = Manifest::read(&dir)? else {
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
    // The derived tables are made again below: only the merged one must be intact (results
    // made before a study derived a table have none of it).
    if !manifest.intact(&dir, &tables[..1]) {
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
    // Derived tables (summaries across units) are a function of the merged table alone:
    // made again here, so that a change in how they summarise (an interval, a statistic)
    // reaches the committed results without rerunning the units. A file that already holds
    // the very table keeps its bytes (those polars wrote, say), so a report leaves unchanged
    // results byte for byte.
    if !study.derived().is_empty() {
        let merged = Table::read_parquet(&dir.join(study.output()))?;
        for (name, t) in study.derive(&exp.name, &merged)? {
            t.write_parquet_if_changed(&dir.join(name))?;
        }
        manifest.complete(&dir, &tables);
    }
    let declared =
        declarative::render(&exp.outputs, &dir, study.output(), &exp.title).map_err(|e| {
            Error::Experiment {
                file: exp.file.display().to_string(),
                at: String::new(),
                field: "(report)".into(),
                reason: e.to_string(),
            }
        })?;
    // Two declarations may not write one file (a faceted `privacy` writes `privacy-d1.md`, as
    // would a table named `privacy-d1`): the second would silently replace the first.
    let mut seen = std::collections::BTreeSet::new();
    if let Some(twice) = declared.iter().find(|f| !seen.insert(f.file_name())) {
        return Err(Error::Experiment {
            file: exp.file.display().to_string(),
            at: String::new(),
            field: "[[plots]] / [[tables]] name".into(),
            reason: format!(
                "two declarations write `{}`: choose another name for one of them",
                twice.file_name().unwrap_or_default().to_string_lossy()
            ),
        });
    }
    let mut files = declared;
    // Claims last: a claim that fails stops the report after its verdicts are written.
    let (claimed, failed) = claims::render(
        &exp.claims,
        &dir,
        study.output(),
        &exp.name,
        &exp.file.display().to_string(),
        exp.profile,
    )?;
    files.extend(claimed);
    manifest.retire_unmade(&dir, &files, &tables)?;
    manifest.add_files(&dir, &files);
    manifest.write(&dir)?;
    if let Some(e) = failed {
        return Err(match std::fs::read_to_string(&exp.file) {
            Ok(text) => experiment::locate_in_text(e, &text),
            Err(_) => e,
        });
    }
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

#[cfg(test)]
mod tests {
    use super::fields::Fields;
    use super::report::pm;
    use super::studies::StudyKind;
    use super::study::Study;
    use super::table::Table;
    use super::*;
    use crate::params::Count;
    use crate::rng::stream;
    use rand::Rng;

    // docs/extending.md's study example, verbatim in substance: it must compile and run.
    const KIND: StudyKind = StudyKind {
        source: file!(),
        name: "coin",
        about: "the share of heads in fair coin flips",
        parse: |f| {
            #[derive(serde::Deserialize)]
            #[serde(deny_unknown_fields)]
            struct Params {
                seed: Option<u64>,
                seeds: Count,
                flips: Option<Count>,
            }
            let p: Params = f.read("a `coin` experiment", &[])?;
            Ok(Box::new(Coin {
                seed: p.seed.unwrap_or(0),
                seeds: f.count("seeds", p.seeds, 1)?,
                flips: p.flips.map_or(Ok(100), |n| f.count("flips", n, 1))?,
            }))
        },
    };
    static COIN: StudyKind = KIND;

    struct Coin {
        seed: u64,
        seeds: u64,
        flips: u64,
    }

    #[derive(serde::Serialize)]
    struct Row {
        rep: u64,
        flips: u64,
        share: f64,
    }

    impl Study for Coin {
        fn units(&self) -> Vec<String> {
            (0..self.seeds).map(|r| format!("rep {r}")).collect()
        }
        fn run_unit(&self, experiment: &str, i: usize) -> Result<Table> {
            let mut rng = stream(self.seed, &[0x636f_696e, i as u64]);
            let heads = (0..self.flips).filter(|_| rng.random::<bool>()).count();
            let share = heads as f64 / self.flips as f64;
            let row = Row {
                rep: i as u64,
                flips: self.flips,
                share,
            };
            Table::from_experiment_rows(experiment, &[row])
        }
        fn output(&self) -> &'static str {
            "flips.parquet"
        }
    }

    #[test]
    fn a_new_study_runs_through_the_runner() {
        // The guide's experiment file: its report is declared, not coded.
        let root: toml::Table = "name = \"coin\"\nkind = \"coin\"\nseed = 1\nseeds = 5\n\
             flips = 1000\n\
             [[plots]]\nname = \"share-by-rep\"\nx = \"rep\"\ny = \"share\"\naggregate = \"none\"\n\
             [[tables]]\nname = \"share\"\nrows = \"experiment\"\ncolumns = \"flips\"\n\
             value = \"share\"\naggregate = \"mean-ci\"\n"
            .parse()
            .unwrap();
        let fields = Fields::new("coin.toml", "", &root);
        let study = (COIN.parse)(&fields).unwrap();
        let exp = Experiment {
            file: "coin.toml".into(),
            name: "coin".into(),
            title: "coin".into(),
            profile: Profile::Smoke,
            config_hash: 42,
            kind: &COIN,
            study,
            outputs: declarative::parse(&fields).unwrap(),
            claims: claims::parse(&fields).unwrap(),
        };
        let out = std::env::temp_dir().join(format!("dptune-coin-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&out);
        let opts = |shard: &str| RunOptions {
            profile: Profile::Smoke,
            threads: Some(2),
            shard: Shard::parse(shard).unwrap(),
            out: out.clone(),
            progress: false,
            rerun_stale: false,
            stop_after_units: None,
            stop_after_records: None,
        };
        assert_eq!(
            run(&exp, &opts("1/2")).unwrap(),
            RunStatus::Partial {
                present: 3,
                total: 5
            }
        );
        let RunStatus::Complete { results, rows, .. } = run(&exp, &opts("2/2")).unwrap() else {
            panic!("the second shard completes the run")
        };
        assert_eq!(rows, 5);
        let t = Table::read_parquet(&results).unwrap();
        assert_eq!(t.u64("rep").unwrap(), &[0, 1, 2, 3, 4]);
        // A fair coin: each share within 5 standard errors (0.016) of one half.
        assert!(t
            .f64("share")
            .unwrap()
            .iter()
            .all(|s| (s.unwrap() - 0.5).abs() < 0.08));
        let mut drawn: Vec<String> = report(&exp, &out)
            .unwrap()
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().to_string())
            .collect();
        drawn.sort();
        assert_eq!(
            drawn,
            [
                "share-by-rep.png",
                "share-by-rep.svg",
                "share.md",
                "share.tex"
            ]
        );
        // The mean share of the five repetitions with its Student-t interval.
        let shares: Vec<f64> = t.f64("share").unwrap().iter().flatten().copied().collect();
        let table = std::fs::read_to_string(results_dir(&out, &exp).join("share.md")).unwrap();
        assert!(
            table.contains(&pm(crate::numeric::stats::mean_interval(&shares), 3)),
            "{table}"
        );
        std::fs::remove_dir_all(&out).unwrap();
    }
}
