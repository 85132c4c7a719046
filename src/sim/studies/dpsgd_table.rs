//! The tabular benchmark's table (`kind = "dpsgd-table"`, issue 64): every configuration of a
//! log grid over a DP-SGD task's (η, L) box, trained once per seed at every noise multiplier
//! of a geometric ladder, so that a tuner can be replayed from the table (its runs looked up,
//! not trained) in microseconds instead of seconds a run.
//!
//! # What a row is
//!
//! One DP-SGD run of the task (T epochs of lots of m without replacement, the task's model and
//! optimiser, as the live `dpsgd-task` workload trains it) at grid point (i, j) — u = (i/(g−1),
//! j/(g−1)) of the unit square, mapped to (η, L) log-scaled exactly as the live workload maps a
//! tuner's u ([`TuningSettings::at`]) — at noise multiplier σ of rung r, from seed s: its test
//! accuracy (the score, **before** any release noise: the replay adds the live mechanism's noise
//! when a tuner asks for the run), the score's sensitivity 1/t (t test rows), its final
//! training loss, whether it diverged, and the run's own privacy (q, steps, and ε at δ by RDP
//! and by PLD: the training run alone, the score's release not included). Run (r, i, j, s)
//! draws from `rng::stream(seed, [0x7461_626c, task, bits(σ), bits(η), bits(L), s])` ("tabl"),
//! a key of what it trains, so a finer grid or a longer ladder keeps every row already made.
//!
//! # The ladder
//!
//! `ladder = { lowest, highest, rungs }`: σ_r equally spaced in ln from `lowest` to `highest`
//! (both ends exact). A tuner calibrated to σ is replayed at the smallest rung ≥ σ
//! ([`Ladder::round_up`]): a run noisier than its calibration needs, so the privacy claimed for
//! it stays an upper bound, at a cost in utility bounded by the ratio of two rungs.
//!
//! # Units
//!
//! One unit per (task, rung): its g² · S runs (side by side in rayon; each from its own
//! stream, so the rows do not depend on the thread count), one row each, in (i, j, s) order.

use super::StudyKind;
use crate::accounting::accountant::{build, Settings};
use crate::accounting::Event;
use crate::data::TrainTest;
use crate::error::{Error, Range, Result};
use crate::learn::mean_loss;
use crate::params::{Count, OneOrMany};
use crate::rng::stream;
use crate::sim::fields::{fnv1a, Fields};
use crate::sim::study::Study;
use crate::sim::table::Table;
use crate::workloads::dpsgd_tasks::{Domain, Task, TaskData, TaskId, TASK_DELTA};
use crate::workloads::dpsgd_tuning::{TuningSettings, CALIBRATED_SIGMA};
use crate::workloads::validation_score::log_grid;
use rayon::prelude::*;
use std::sync::{Arc, OnceLock};

pub const KIND: StudyKind = StudyKind {
    source: file!(),
    name: "dpsgd-table",
    about:
        "the tabular benchmark: a DP-SGD task's (η, L) grid trained per seed at every σ of a ladder",
    parse: |f| Ok(Box::new(parse(f)?)),
};

/// The stream tag of a table run ("tabl").
const TABLE_STREAM: u64 = 0x7461_626c;

/// The noise multipliers a table trains at: `rungs` values equally spaced in ln from `lowest`
/// to `highest`.
#[derive(Clone, Debug, PartialEq)]
pub struct Ladder {
    pub sigmas: Vec<f64>,
}

impl Ladder {
    pub fn new(lowest: f64, highest: f64, rungs: usize) -> Result<Self> {
        if rungs < 2 {
            return Err(Error::invalid(
                "ladder.rungs",
                rungs,
                "at least 2 (σ from lowest to highest)",
            ));
        }
        let sigmas = log_grid("ladder", [lowest, highest], "ladder.rungs", rungs)?;
        Ok(Ladder { sigmas })
    }

    /// The smallest rung at least `sigma` (its index and value): the σ a run calibrated to
    /// `sigma` is replayed at. None above the top rung (the table cannot replay it).
    pub fn round_up(&self, sigma: f64) -> Option<(usize, f64)> {
        let r = self.sigmas.partition_point(|&s| s < sigma);
        self.sigmas.get(r).map(|&s| (r, s))
    }

    /// The largest ratio of two neighbouring rungs: the most a run's σ is raised by
    /// rounding up.
    pub fn largest_step(&self) -> f64 {
        self.sigmas
            .windows(2)
            .map(|w| w[1] / w[0])
            .fold(1.0, f64::max)
    }
}

/// A `dpsgd-table` file.
pub struct DpsgdTable {
    pub seed: u64,
    pub tasks: Vec<TaskId>,
    pub epochs: u64,
    pub lot_size: usize,
    /// The searched box per task: (η range, L range), log-scaled.
    pub learning_rate: Option<[f64; 2]>,
    pub clip: Option<[f64; 2]>,
    /// Grid points per axis (g).
    pub grid: usize,
    pub ladder: Ladder,
    /// Runs per (configuration, σ) cell (S).
    pub seeds: u64,
    /// Adult as two UCI files `[train, test]` instead of the cache.
    pub adult: Option<Vec<String>>,
    loaded: OnceLock<std::result::Result<Vec<Loaded>, Error>>,
}

/// A task ready to train: the task, its settings (the box's map), and the training part for
/// the final loss.
struct Loaded {
    task: Arc<Task>,
    settings: TuningSettings,
    train: (ndarray::Array2<f64>, Vec<usize>),
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    seed: Option<u64>,
    task: Option<OneOrMany<String>>,
    epochs: Option<Count>,
    lot_size: Option<Count>,
    learning_rate_range: Option<[f64; 2]>,
    clip_range: Option<[f64; 2]>,
    grid: Option<Count>,
    ladder: Option<LadderParams>,
    seeds: Option<Count>,
    adult: Option<Vec<String>>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct LadderParams {
    lowest: f64,
    highest: f64,
    rungs: Count,
}

fn parse(f: &Fields) -> Result<DpsgdTable> {
    let p: Params = f.read("a `dpsgd-table` experiment", &[])?;
    let names = p
        .task
        .ok_or_else(|| f.missing("task", "a task name or a list of them (e.g. adult-lr-sgd)"))?
        .into_vec();
    let mut tasks = Vec::new();
    for name in &names {
        let id = TaskId::parse(name).map_err(|e| f.wrap(e))?;
        if id.data() != TaskData::Adult {
            return Err(f.bad(
                "task",
                &format!("{name}: only the Adult tasks train on the CPU in table time (Fashion-MNIST's table needs a GPU)"),
            ));
        }
        if tasks.contains(&id) {
            return Err(f.bad("task", &format!("{name} is listed twice")));
        }
        tasks.push(id);
    }
    let ladder = p
        .ladder
        .ok_or_else(|| f.missing("ladder", "{ lowest = σ, highest = σ, rungs = n }"))?;
    let grid = f.count(
        "grid",
        p.grid.ok_or_else(|| f.missing("grid", "points per axis"))?,
        2,
    )?;
    if grid > 64 {
        return Err(f.bad(
            "grid",
            &format!("{grid} is invalid: at most 64 points per axis"),
        ));
    }
    let rungs = f.count("ladder.rungs", ladder.rungs, 2)?;
    if rungs > 1000 {
        return Err(f.bad("ladder.rungs", &format!("{rungs} is invalid: at most 1000")));
    }
    let lowest = f.in_range("ladder.lowest", ladder.lowest, Range::Positive)?;
    let highest = f.in_range("ladder.highest", ladder.highest, Range::Positive)?;
    if highest <= lowest {
        return Err(f.bad("ladder.highest", "above ladder.lowest"));
    }
    let table = DpsgdTable {
        seed: p.seed.unwrap_or(0),
        tasks,
        epochs: f.count(
            "epochs",
            p.epochs.ok_or_else(|| f.missing("epochs", "T"))?,
            1,
        )?,
        lot_size: f.count(
            "lot_size",
            p.lot_size.ok_or_else(|| f.missing("lot_size", "m"))?,
            1,
        )? as usize,
        learning_rate: p
            .learning_rate_range
            .map(|r| f.interval("learning_rate_range", r))
            .transpose()?,
        clip: p
            .clip_range
            .map(|r| f.interval("clip_range", r))
            .transpose()?,
        grid: grid as usize,
        ladder: Ladder::new(lowest, highest, rungs as usize).map_err(|e| f.wrap(e))?,
        seeds: f.seeds(p.seeds.ok_or_else(|| f.missing("seeds", "runs per cell"))?)?,
        adult: p.adult,
        loaded: OnceLock::new(),
    };
    // Given files are read now (their errors belong to the file); the cache on first use.
    if table.adult.is_some() {
        table.loaded().map_err(|e| f.wrap(e))?;
    }
    Ok(table)
}

impl DpsgdTable {
    fn loaded(&self) -> Result<&[Loaded]> {
        self.loaded
            .get_or_init(|| self.load())
            .as_deref()
            .map_err(Clone::clone)
    }

    fn load(&self) -> Result<Vec<Loaded>> {
        let data: TrainTest = match &self.adult {
            Some(files) => TaskData::Adult.from_files(files)?,
            None => TaskData::Adult.cached()?,
        };
        let train = {
            let labels = data.train.labels().ok_or_else(|| {
                Error::invalid("adult", "a training part without labels", "labelled rows")
            })?;
            (
                data.train.x.as_standard_layout().into_owned(),
                labels.to_vec(),
            )
        };
        self.tasks
            .iter()
            .map(|&id| {
                // σ is the ladder's, any of it: the task's box is Table 1's but for σ.
                let mut task = Task::new(id, &data)?;
                let domain = Domain {
                    noise_multiplier: CALIBRATED_SIGMA,
                    ..*task.domain()
                };
                task = task.with_domain(domain);
                let d = task.domain();
                let settings = TuningSettings {
                    epochs: d.check("epochs", self.epochs as f64)?.round() as u64,
                    lot_size: d.check("lot_size", self.lot_size as f64)?.round() as usize,
                    noise_multiplier: self.ladder.sigmas[0],
                    learning_rate: self.learning_rate.map_or(d.learning_rate, |[a, b]| (a, b)),
                    clip: self.clip.map_or(d.clip, |[a, b]| (a, b)),
                    oracle_runs: 1,
                    best_samples: 1,
                };
                settings.validate(&task)?;
                for &s in &self.ladder.sigmas {
                    d.check("noise_multiplier", s)?;
                }
                Ok(Loaded {
                    task: Arc::new(task),
                    settings,
                    train: train.clone(),
                })
            })
            .collect()
    }

    /// Grid point k of an axis, in the unit interval (k/(g − 1): both ends exact).
    pub fn grid_u(&self, k: usize) -> f64 {
        k as f64 / (self.grid - 1) as f64
    }

    /// Unit `i`: (task index, rung).
    fn unit(&self, i: usize) -> (usize, usize) {
        (i / self.ladder.sigmas.len(), i % self.ladder.sigmas.len())
    }
}

/// One table run: a row of `table.parquet`.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TableRow {
    pub task: String,
    pub rung: u64,
    pub sigma: f64,
    /// Grid indices and their unit-square coordinates.
    pub i_eta: u64,
    pub i_clip: u64,
    pub u_eta: f64,
    pub u_clip: f64,
    pub learning_rate: f64,
    pub clip: f64,
    /// The run's seed index in its cell, 0 … S − 1.
    pub seed: u64,
    pub epochs: u64,
    pub lot_size: u64,
    /// n and t: the training rows (the accountant's size) and the test rows (the score's).
    pub train_size: u64,
    pub test_size: u64,
    /// q = m/n and the steps T·round(n/m) of the run's privacy.
    pub sampling_rate: f64,
    pub steps: u64,
    /// ε at `delta` of the training run alone, by RDP and by PLD (each rounded up).
    pub epsilon_rdp: f64,
    pub epsilon_pld: f64,
    pub delta: f64,
    /// The score before any release noise: the test accuracy, in [0, 1].
    pub test_accuracy: f64,
    /// How far one test record moves the score: 1/t.
    pub score_sensitivity: f64,
    /// The test accuracy of the run's initial parameters, never trained (⊥: what a search
    /// that releases nothing outputs).
    pub initial_accuracy: f64,
    /// The mean training loss at the final parameters (None where it is not finite).
    pub train_loss: Option<f64>,
    pub diverged: bool,
    /// Steps taken (fewer than `steps` when the run diverged).
    pub steps_taken: u64,
    pub run_wall_s: f64,
}

/// The training run's ε at δ = [`TASK_DELTA`] by accountant `key`.
fn epsilon_of(event: &Event, key: &str) -> Result<f64> {
    let mut a = build(key, &Settings::default())?;
    a.compose(event)?;
    Ok(a.epsilon(TASK_DELTA)?.epsilon)
}

/// The stream run `s` of the cell of `h` (its η, L and σ) on `task` trains from, for table
/// seed `seed`: keyed by what the run trains, not by where it sits in the grid or the ladder.
pub fn run_stream(
    seed: u64,
    task: TaskId,
    h: &crate::workloads::dpsgd_tasks::Hyperparameters,
    s: u64,
) -> rand_chacha::ChaCha20Rng {
    stream(
        seed,
        &[
            TABLE_STREAM,
            fnv1a(task.name().as_bytes()),
            h.noise_multiplier.to_bits(),
            h.learning_rate.to_bits(),
            h.clip.to_bits(),
            s,
        ],
    )
}

/// The rows of unit (task `t`, rung `r`).
fn run_cell(s: &DpsgdTable, experiment: &str, t: usize, r: usize) -> Result<Table> {
    let loaded = &s.loaded()?[t];
    let task = &loaded.task;
    let sigma = s.ladder.sigmas[r];
    let mut settings = loaded.settings.clone();
    settings.noise_multiplier = sigma;
    let at = |i: usize, j: usize| -> Result<crate::workloads::dpsgd_tasks::Hyperparameters> {
        let (eta, clip) = settings
            .at(&vec![s.grid_u(i), s.grid_u(j)])
            .expect("grid points lie in the unit square");
        Ok(crate::workloads::dpsgd_tasks::Hyperparameters {
            epochs: settings.epochs,
            lot_size: settings.lot_size,
            learning_rate: eta,
            noise_multiplier: sigma,
            clip,
        })
    };
    // The run's privacy depends on (T, m, σ, n) alone: the same for every grid point.
    let sgd = task.dpsgd(&at(0, 0)?)?;
    let event = Event::dpsgd(&sgd)?;
    let (epsilon_rdp, epsilon_pld) = (epsilon_of(&event, "rdp")?, epsilon_of(&event, "pld")?);
    let n = task.train_size();
    let steps =
        crate::accounting::steps_for_epochs(n as u64, settings.lot_size as u64, settings.epochs)?;
    let jobs: Vec<(usize, usize, u64)> = (0..s.grid)
        .flat_map(|i| (0..s.grid).flat_map(move |j| (0..s.seeds).map(move |k| (i, j, k))))
        .collect();
    let rows = jobs
        .par_iter()
        .map(|&(i, j, k)| -> Result<TableRow> {
            let h = at(i, j)?;
            let mut rng = run_stream(s.seed, task.id(), &h, k);
            // The run draws its initial parameters first: the same draws give the model a
            // search that releases nothing outputs (⊥, never trained).
            let initial_accuracy = task.untrained_accuracy(&mut rng.clone())?;
            let fit = task.fit(&h, &mut rng)?;
            Ok(TableRow {
                task: task.id().name().to_string(),
                rung: r as u64,
                sigma,
                i_eta: i as u64,
                i_clip: j as u64,
                u_eta: s.grid_u(i),
                u_clip: s.grid_u(j),
                learning_rate: h.learning_rate,
                clip: h.clip,
                seed: k,
                epochs: h.epochs,
                lot_size: h.lot_size as u64,
                train_size: n as u64,
                test_size: task.test_size() as u64,
                sampling_rate: h.lot_size as f64 / n as f64,
                steps,
                epsilon_rdp,
                epsilon_pld,
                delta: TASK_DELTA,
                test_accuracy: fit.test_accuracy,
                score_sensitivity: 1.0 / task.test_size() as f64,
                initial_accuracy,
                train_loss: mean_loss(
                    task.model(),
                    &fit.params,
                    loaded.train.0.view(),
                    &loaded.train.1,
                )
                .ok()
                .filter(|l| l.is_finite()),
                diverged: fit.diverged,
                steps_taken: fit.steps,
                run_wall_s: fit.wall_secs,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Table::from_experiment_rows(experiment, &rows)
}

impl Study for DpsgdTable {
    fn units(&self) -> Vec<String> {
        self.tasks
            .iter()
            .flat_map(|t| {
                self.ladder
                    .sigmas
                    .iter()
                    .map(move |s| format!("{} | sigma={s}", t.name()))
            })
            .collect()
    }

    fn unit_count(&self) -> u64 {
        (self.tasks.len() * self.ladder.sigmas.len()) as u64
    }

    fn run_unit(&self, experiment: &str, i: usize) -> Result<Table> {
        let (t, r) = self.unit(i);
        run_cell(self, experiment, t, r)
    }

    fn output(&self) -> &'static str {
        "table.parquet"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ladder_rounds_up_to_its_next_rung() {
        let l = Ladder::new(0.5, 8.0, 5).unwrap();
        let want = [0.5, 1.0, 2.0, 4.0, 8.0];
        assert_eq!(l.sigmas.len(), 5);
        for (s, w) in l.sigmas.iter().zip(want) {
            assert!((s - w).abs() < 1e-12 * w, "{s} against {w}");
        }
        // Both ends exactly as written.
        assert_eq!((l.sigmas[0], l.sigmas[4]), (0.5, 8.0));
        assert_eq!(l.round_up(0.5), Some((0, 0.5)));
        assert_eq!(l.round_up(0.1), Some((0, 0.5)));
        assert_eq!(l.round_up(1.0000001).map(|r| r.0), Some(2));
        assert_eq!(l.round_up(3.9).map(|r| r.0), Some(3));
        assert_eq!(l.round_up(7.9), Some((4, 8.0)));
        assert_eq!(l.round_up(8.0), Some((4, 8.0)));
        assert_eq!(l.round_up(8.1), None);
        // Never below the σ asked for.
        for k in 0..200 {
            let sigma = 0.5 + k as f64 * 0.0375;
            let (_, up) = l.round_up(sigma).unwrap();
            assert!(up >= sigma, "{sigma} → {up}");
        }
        assert!((l.largest_step() - 2.0).abs() < 1e-12);
        assert!(Ladder::new(0.5, 8.0, 1).is_err());
        assert!(Ladder::new(8.0, 0.5, 3).is_err());
    }
}
