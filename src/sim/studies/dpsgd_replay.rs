//! The tabular benchmark's replay (`kind = "dpsgd-replay"`, issue 64): every tuner of a
//! `tuning` file run on a `dpsgd-table` instead of on live DP-SGD, its runs looked up, not
//! trained, so that thousands of searches per (tuner, budget, task) take seconds.
//!
//! # What a replayed run is
//!
//! A tuner calibrated to noise multiplier σ (exactly as the live `dpsgd-equal-budget`
//! calibrates it: its guarantee over its runs meets the target) asks for a run at u: the
//! replay answers with a run of the table at the grid point nearest to u, at the smallest rung
//! ≥ σ (so the run is at least as noisy as the guarantee assumed: the privacy claimed stays an
//! upper bound), one of the cell's seeds drawn uniformly, its accuracy released exactly as the
//! live workload releases it (N(0, (σ/t)²) drawn now, at the calibrated σ). The utility of
//! what a search chose is the cell's mean accuracy (the live benchmark's fresh runs at the
//! chosen point); ⊥ the untrained models' mean.
//!
//! # The table's own randomness
//!
//! Each cell holds S runs, a sample: a table built from other seeds would rank the tuners
//! somewhat differently, however many searches are replayed on this one. So search `r` runs
//! on bootstrap table `r mod B` (every cell's S seeds drawn with replacement, from a stream of
//! the file's seed, the task and the table's index), and every interval is the blocked t over
//! tables and searches ([`crate::numeric::stats::blocked_t`]): it holds both. Every tuner and
//! budget meets the same B tables (common random numbers: comparisons pair by table and
//! search).
//!
//! # The reference
//!
//! The oracle spends all of ε on one DP-SGD run of the best configuration (known
//! hyperparameters, no score released): its σ calibrated by the `one-shot` tuner's bound on
//! the training run alone, rounded up to the ladder, and its utility the best cell mean at that
//! rung on the search's table. A search's `price` is the oracle's utility less its own (the
//! price of tuning privately); its `regret` the best cell mean at its own rung less its own
//! (what a non-private choice among the same runs would gain).

use super::dpsgd_table::{Ladder, TableRow};
use super::tuning::{cells as tuning_cells, run_cell, tuner_entries, Tuning};
use super::StudyKind;
use crate::accounting::{smallest_run_noise, Event, Gaussian};
use crate::data::uniform_below;
use crate::error::{fmt_num, Error, Range, Result};
use crate::numeric::stats::blocked_t;
use crate::params::{Count, OneOrMany};
use crate::rng::stream;
use crate::sim::fields::{fnv1a, Fields};
use crate::sim::store::Journal;
use crate::sim::study::Study;
use crate::sim::table::{Table, Values};
use crate::tuners::BudgetPlan;
use crate::workloads::{
    Declarations, Hyper, Oracle, PrivateTraining, Space, TrainingDeclaration, Variant, Workload,
    WorkloadSpec,
};
use rand::RngCore;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

pub const KIND: StudyKind = StudyKind {
    source: file!(),
    name: "dpsgd-replay",
    about: "the tabular benchmark: every tuner replayed on a `dpsgd-table` at equal budgets",
    parse: |f| Ok(Box::new(parse(f)?)),
};

/// The stream tag of the bootstrap tables ("boot").
const DRAW_STREAM: u64 = 0x626f_6f74;

/// One task's table indexed for replay: the accuracies of run (rung, i, j, s), the initial
/// models' mean accuracy (⊥), and the sizes a run's privacy depends on.
#[derive(Clone, Debug, PartialEq)]
pub struct Cells {
    pub task: String,
    pub grid: usize,
    pub ladder: Ladder,
    pub seeds: usize,
    /// η of grid index i and L of grid index j (the runs' own values).
    pub learning_rate: Vec<f64>,
    pub clip: Vec<f64>,
    accuracy: Vec<f64>,
    /// The mean test accuracy of the runs' initial models: what ⊥ (a search that releases
    /// nothing) outputs.
    pub nothing: f64,
    pub train_size: u64,
    pub test_size: u64,
    pub lot_size: u64,
    pub epochs: u64,
}

impl Cells {
    /// The cells of `task` from a table's rows: every (rung, i, j, s) exactly once, one run
    /// setting (T, m, n, t) for all of them.
    pub fn of(rows: &[TableRow], task: &str) -> Result<Cells> {
        let rows: Vec<&TableRow> = rows.iter().filter(|r| r.task == task).collect();
        let first = rows
            .first()
            .ok_or_else(|| Error::invalid("task", task, "a task of the table"))?;
        let mut sigmas: Vec<f64> = rows.iter().map(|r| r.sigma).collect();
        sigmas.sort_by(f64::total_cmp);
        sigmas.dedup();
        let grid = rows
            .iter()
            .map(|r| r.i_eta.max(r.i_clip))
            .max()
            .unwrap_or(0) as usize
            + 1;
        let seeds = rows.iter().map(|r| r.seed).max().unwrap_or(0) as usize + 1;
        let size = sigmas.len() * grid * grid * seeds;
        let broken = |why: String| Error::Infeasible(format!("the table of {task}: {why}"));
        if rows.len() != size {
            return Err(broken(format!(
                "{} rows where {} σ × {grid}² points × {seeds} seeds make {size}",
                rows.len(),
                sigmas.len()
            )));
        }
        let mut accuracy = vec![f64::NAN; size];
        let (mut learning_rate, mut clip) = (vec![f64::NAN; grid], vec![f64::NAN; grid]);
        let mut initial = 0.0;
        for r in &rows {
            if (r.epochs, r.lot_size, r.train_size, r.test_size)
                != (
                    first.epochs,
                    first.lot_size,
                    first.train_size,
                    first.test_size,
                )
            {
                return Err(broken("runs of different settings (T, m, n, t)".into()));
            }
            let rung = sigmas.partition_point(|&s| s < r.sigma);
            let k = ((rung * grid + r.i_eta as usize) * grid + r.i_clip as usize) * seeds
                + r.seed as usize;
            if !accuracy[k].is_nan() || !(0.0..=1.0).contains(&r.test_accuracy) {
                return Err(broken(format!(
                    "run (σ = {}, {}, {}, seed {}) twice, or an accuracy outside [0, 1]",
                    r.sigma, r.i_eta, r.i_clip, r.seed
                )));
            }
            accuracy[k] = r.test_accuracy;
            learning_rate[r.i_eta as usize] = r.learning_rate;
            clip[r.i_clip as usize] = r.clip;
            initial += r.initial_accuracy;
        }
        Ok(Cells {
            task: task.to_string(),
            grid,
            ladder: Ladder { sigmas },
            seeds,
            learning_rate,
            clip,
            accuracy,
            nothing: initial / rows.len() as f64,
            train_size: first.train_size,
            test_size: first.test_size,
            lot_size: first.lot_size,
            epochs: first.epochs,
        })
    }

    /// The test accuracy of run `s` of cell (`rung`, `i`, `j`).
    pub fn accuracy(&self, rung: usize, i: usize, j: usize, s: usize) -> f64 {
        self.accuracy[((rung * self.grid + i) * self.grid + j) * self.seeds + s]
    }

    /// The grid index nearest to `u` in [0, 1] (None outside it).
    pub fn nearest(&self, u: f64) -> Option<usize> {
        (0.0..=1.0)
            .contains(&u)
            .then(|| (u * (self.grid - 1) as f64).round() as usize)
    }

    /// What one live run at noise multiplier `sigma` releases, as the live `dpsgd-task`
    /// workload declares it: its DP-SGD steps (lots without replacement), then its test
    /// accuracy plus N(0, (σ/t)²) (sensitivity 1/t).
    pub fn run_event(&self, sigma: f64) -> Result<Event> {
        let release = self.release(sigma)?;
        Event::composed(vec![
            self.training_event(sigma)?,
            Event::of_gaussian(&release),
        ])
    }

    /// The score's release at noise multiplier `sigma`: sensitivity 1/t, sd σ/t.
    pub fn release(&self, sigma: f64) -> Result<crate::accounting::Gaussian> {
        let t = self.test_size as f64;
        crate::accounting::Gaussian::new(1.0 / t, sigma / t)
    }
}

/// A bootstrap table of one task: for every cell, which of its S seeds stand in its place
/// (S draws with replacement).
#[derive(Clone, Debug, PartialEq)]
pub struct Draw {
    seeds: Vec<u16>,
}

impl Draw {
    /// Bootstrap table `index` of `cells` under file seed `seed`.
    pub fn new(cells: &Cells, seed: u64, index: u64) -> Draw {
        let mut rng = stream(seed, &[DRAW_STREAM, fnv1a(cells.task.as_bytes()), index]);
        let s = cells.seeds as u64;
        Draw {
            seeds: (0..cells.accuracy.len())
                .map(|_| uniform_below(&mut rng, s) as u16)
                .collect(),
        }
    }
}

impl Cells {
    /// The seed that stands at position `k` of cell (`rung`, `i`, `j`) on `draw` (the table
    /// itself without one).
    fn seed_of(&self, draw: Option<&Draw>, rung: usize, i: usize, j: usize, k: usize) -> usize {
        let at = ((rung * self.grid + i) * self.grid + j) * self.seeds + k;
        draw.map_or(k, |d| d.seeds[at] as usize)
    }

    /// The mean accuracy of cell (`rung`, `i`, `j`) on `draw`.
    pub fn mean(&self, draw: Option<&Draw>, rung: usize, i: usize, j: usize) -> f64 {
        let total: f64 = (0..self.seeds)
            .map(|k| self.accuracy(rung, i, j, self.seed_of(draw, rung, i, j, k)))
            .sum();
        total / self.seeds as f64
    }

    /// The best cell mean at `rung` on `draw`, and its grid point.
    pub fn best(&self, draw: Option<&Draw>, rung: usize) -> (f64, (usize, usize)) {
        let mut best = (f64::NEG_INFINITY, (0, 0));
        for i in 0..self.grid {
            for j in 0..self.grid {
                let m = self.mean(draw, rung, i, j);
                if m > best.0 {
                    best = (m, (i, j));
                }
            }
        }
        best
    }

    /// One DP-SGD run at noise multiplier `sigma` alone, no score released (the oracle's).
    pub fn training_event(&self, sigma: f64) -> Result<Event> {
        let sgd = crate::accounting::DpSgd::without_replacement(
            self.train_size,
            self.lot_size,
            sigma,
            self.epochs,
        )?;
        Event::dpsgd(&sgd)
    }
}

/// A tuner's runs answered from a table: the run at the grid point nearest to the trial's u,
/// at the smallest rung ≥ the calibrated σ, a seed of the cell (on the bootstrap table
/// `draw`, or the table itself) drawn uniformly, and its accuracy released as the live
/// workload releases it at the calibrated σ, the noise drawn now. A point outside the square
/// releases 0 plus the same noise, as the live workload does. A workload: any tuner runs on it
/// through its session, and its utility is the chosen cell's mean.
pub struct Replay {
    cells: Arc<Cells>,
    draw: Option<Arc<Draw>>,
    /// The rung the calibrated σ rounds up to; None above the ladder (a calibration's probe:
    /// only its declarations are read, and a cell whose σ lies there is refused).
    rung: Option<usize>,
    release: Gaussian,
    run: Event,
    space: Space,
    name: String,
}

impl Replay {
    /// The replay of `cells` (on `draw`) for runs calibrated to noise multiplier `sigma`.
    pub fn new(cells: Arc<Cells>, draw: Option<Arc<Draw>>, sigma: f64) -> Result<Replay> {
        let sigma = Range::Positive.check("noise", sigma)?;
        Ok(Replay {
            rung: cells.ladder.round_up(sigma).map(|r| r.0),
            release: cells.release(sigma)?,
            run: cells.run_event(sigma)?,
            space: Space::UnitBox { dim: 2 },
            name: format!("dpsgd-replay({})", cells.task),
            draw,
            cells,
        })
    }

    /// The rung runs are replayed at (None above the ladder).
    pub fn rung(&self) -> Option<usize> {
        self.rung
    }

    /// The score's release (the live one at the calibrated σ).
    pub fn release(&self) -> &Gaussian {
        &self.release
    }

    /// The grid point nearest to the trial's u (None outside the square).
    pub fn point(&self, u: &[f64]) -> Option<(usize, usize)> {
        match u {
            [a, b] => Some((self.cells.nearest(*a)?, self.cells.nearest(*b)?)),
            _ => None,
        }
    }
}

impl PrivateTraining for Replay {
    fn run_event(&self) -> &Event {
        &self.run
    }
    fn train(&self, h: &Hyper, rng: &mut dyn RngCore) -> f64 {
        let score = match (self.rung, self.point(h)) {
            (Some(r), Some((i, j))) => {
                let k = uniform_below(rng, self.cells.seeds as u64) as usize;
                let s = self.cells.seed_of(self.draw.as_deref(), r, i, j, k);
                self.cells.accuracy(r, i, j, s)
            }
            (Some(_), None) => 0.0,
            // Never told to a tuner: a cell calibrated above the ladder is refused.
            (None, _) => f64::NAN,
        };
        score + self.release.noise(rng)
    }
}

impl Oracle for Replay {
    /// The mean accuracy of the chosen cell at the replay's rung (NaN outside the square).
    fn utility(&self, h: &Hyper) -> f64 {
        match (self.rung, self.point(h)) {
            (Some(r), Some((i, j))) => self.cells.mean(self.draw.as_deref(), r, i, j),
            _ => f64::NAN,
        }
    }
    /// The best cell mean at the replay's rung: a non-private choice among the same runs.
    fn best_utility(&self) -> f64 {
        self.rung
            .map_or(f64::NAN, |r| self.cells.best(self.draw.as_deref(), r).0)
    }
}

impl Workload for Replay {
    fn name(&self) -> String {
        self.name.clone()
    }
    fn space(&self) -> &Space {
        &self.space
    }
    fn oracle(&self) -> &dyn Oracle {
        self
    }
    fn private_training(&self) -> Option<&dyn PrivateTraining> {
        Some(self)
    }
    fn utility_of_nothing(&self) -> f64 {
        self.cells.nothing
    }
    /// The (η, L) of the grid point the replay ran (the point itself outside the square).
    fn coordinates(&self, h: &Hyper) -> Vec<(String, f64)> {
        match self.point(h) {
            Some((i, j)) => vec![
                ("eta".into(), self.cells.learning_rate[i]),
                ("L".into(), self.cells.clip[j]),
            ],
            None => h
                .iter()
                .enumerate()
                .map(|(i, v)| (format!("u{}", i + 1), *v))
                .collect(),
        }
    }
}

/// A table read for replay: per task its cells and its B bootstrap tables, and the hash of
/// the file's bytes.
pub struct Loaded {
    pub cells: Vec<Arc<Cells>>,
    pub draws: Vec<Vec<Arc<Draw>>>,
    pub checksum: u64,
}

/// The table as parsing left it: read, or why not (said when the study is checked, so that a
/// checkout without the table can still list, check and run every other file).
type Shared = Arc<std::result::Result<Loaded, Error>>;

/// The replay as a `tuning` study's workload: one variant per task, repetition `rep` on
/// bootstrap table `rep mod B`.
struct ReplaySpec {
    tasks: Vec<String>,
    loaded: Shared,
    params: String,
}

impl WorkloadSpec for ReplaySpec {
    fn kind(&self) -> &'static str {
        "dpsgd-replay"
    }
    fn params(&self) -> String {
        self.params.clone()
    }
    fn variants(&self) -> Vec<Variant> {
        self.tasks
            .iter()
            .map(|t| Variant {
                label: t.clone(),
                dim: 2,
            })
            .collect()
    }
    fn default_noise(&self) -> Option<f64> {
        None
    }
    fn regret_unavailable(&self) -> Option<String> {
        Some("the best cell mean moves with each tuner's calibrated σ".into())
    }
    fn instance(
        &self,
        variant: usize,
        _seed: u64,
        rep: u64,
        noise: f64,
    ) -> Result<Box<dyn Workload>> {
        let loaded = self.loaded.as_ref().as_ref().map_err(Clone::clone)?;
        let cells = loaded
            .cells
            .get(variant)
            .ok_or_else(|| Error::invalid("variant", variant, "a task of the file"))?;
        let draws = &loaded.draws[variant];
        let draw = Arc::clone(&draws[(rep % draws.len() as u64) as usize]);
        Ok(Box::new(Replay::new(Arc::clone(cells), Some(draw), noise)?))
    }
}

/// An oracle: its σ, the rung it rounds up to, and its guarantee's ε.
type Oracled = (f64, usize, f64);

/// A `dpsgd-replay` file.
pub struct DpsgdReplay {
    pub tuning: Tuning,
    /// Bootstrap tables (B): search r runs on table r mod B.
    pub tables: u64,
    /// The table file.
    pub table: String,
    /// The live benchmark's runs.parquet, if given.
    pub live: Option<String>,
    loaded: Shared,
    /// The oracle per (task, bits of ε), once computed (its calibration is the costly part).
    oracles: std::sync::Mutex<BTreeMap<(usize, u64), Oracled>>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    seed: Option<u64>,
    table: Option<String>,
    task: Option<OneOrMany<String>>,
    searches: Option<Count>,
    bootstrap_tables: Option<Count>,
    delta: Option<f64>,
    budget: Option<Budget>,
    /// A live `tuning` result (runs.parquet) of the same tasks and tuners to check against.
    live: Option<String>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Budget {
    epsilons: OneOrMany<f64>,
}

/// Reads the table at `path` for `tasks` (each once, each in the table), with `tables`
/// bootstrap tables per task under file seed `seed`.
fn load(f: &Fields, path: &str, tasks: &[String], seed: u64, tables: u64) -> Result<Loaded> {
    let bytes = std::fs::read(path).map_err(|e| {
        f.bad(
            "table",
            &format!("{path} cannot be read ({e}): build it with `dptune sim run` on its file"),
        )
    })?;
    let rows: Vec<TableRow> = Table::read_parquet(Path::new(path))
        .and_then(|t| t.rows())
        .map_err(|e| f.wrap(e.context(path)))?;
    let mut in_table: Vec<String> = rows.iter().map(|r| r.task.clone()).collect();
    in_table.sort();
    in_table.dedup();
    let mut cells = Vec::new();
    for task in tasks {
        if !in_table.contains(task) {
            return Err(f.bad(
                "task",
                &format!(
                    "{task} is not in {path} (its tasks: {})",
                    in_table.join(", ")
                ),
            ));
        }
        cells.push(Arc::new(Cells::of(&rows, task).map_err(|e| f.wrap(e))?));
    }
    let draws = cells
        .iter()
        .map(|c| {
            (0..tables)
                .map(|b| Arc::new(Draw::new(c, seed, b)))
                .collect()
        })
        .collect();
    Ok(Loaded {
        cells,
        draws,
        checksum: fnv1a(&bytes),
    })
}

fn parse(f: &Fields) -> Result<DpsgdReplay> {
    let p: Params = f.read("a `dpsgd-replay` experiment", &["tuners"])?;
    let seed = p.seed.unwrap_or(0);
    let path = p.table.ok_or_else(|| {
        f.missing(
            "table",
            "a `dpsgd-table` result (e.g. results/dpsgd-table-adult/table.parquet)",
        )
    })?;
    let tasks = p
        .task
        .ok_or_else(|| f.missing("task", "the table's tasks to replay (e.g. adult-lr-sgd)"))?
        .into_vec();
    if let Some(k) = (1..tasks.len()).find(|&k| tasks[..k].contains(&tasks[k])) {
        return Err(f.bad("task", &format!("{} is listed twice", tasks[k])));
    }
    let searches = f.seeds(
        p.searches
            .ok_or_else(|| f.missing("searches", "searches per tuner, budget and task"))?,
    )?;
    let tables = f.count(
        "bootstrap_tables",
        p.bootstrap_tables
            .ok_or_else(|| f.missing("bootstrap_tables", "bootstrap tables (B ≥ 2)"))?,
        2,
    )?;
    if tables > searches {
        return Err(f.bad(
            "bootstrap_tables",
            &format!("{tables} is invalid: at most `searches` ({searches}), each table one search at least"),
        ));
    }
    let delta = f.in_range("delta", p.delta.unwrap_or(1e-5), Range::OpenUnit)?;
    let eps = p
        .budget
        .ok_or_else(|| f.missing("budget", "{ epsilons = [...] }: the equal budgets"))?
        .epsilons
        .into_vec();
    for (i, e) in eps.iter().enumerate() {
        if !Range::Positive.contains(*e) || eps[..i].contains(e) {
            return Err(f.bad(
                "budget.epsilons",
                &format!("{} is invalid: each positive, each once", fmt_num(*e)),
            ));
        }
    }
    let loaded: Shared = Arc::new(load(f, &path, &tasks, seed, tables));
    let checksum = match loaded.as_ref() {
        Ok(l) => format!("{:016x}", l.checksum),
        Err(_) => "unread".into(),
    };
    let spec = ReplaySpec {
        tasks,
        loaded: Arc::clone(&loaded),
        params: format!("table={path} ({checksum}), bootstrap_tables={tables}"),
    };
    let tuning = Tuning {
        seed,
        seeds: searches,
        delta,
        accountant: Default::default(),
        budgets: eps.into_iter().map(Some).collect(),
        workload: Box::new(spec),
        tuners: tuner_entries(f)?,
        front: None,
    };
    Ok(DpsgdReplay {
        tuning,
        tables,
        table: path,
        live: p.live,
        loaded,
        oracles: Default::default(),
    })
}

impl DpsgdReplay {
    /// The table read (or why it could not be).
    pub fn loaded(&self) -> Result<&Loaded> {
        self.loaded.as_ref().as_ref().map_err(Clone::clone)
    }
}

impl DpsgdReplay {
    /// The oracle of `task` at budget ε: its σ (one run, no release, by the `one-shot`
    /// tuner's bound), the rung it rounds up to, and its guarantee's ε.
    pub fn oracle(&self, task: usize, epsilon: f64) -> Result<(f64, usize, f64)> {
        let key = (task, epsilon.to_bits());
        if let Some(known) = self.oracles.lock().ok().and_then(|m| m.get(&key).copied()) {
            return Ok(known);
        }
        let found = self.oracle_uncached(task, epsilon)?;
        if let Ok(mut m) = self.oracles.lock() {
            m.insert(key, found);
        }
        Ok(found)
    }

    fn oracle_uncached(&self, task: usize, epsilon: f64) -> Result<(f64, usize, f64)> {
        let cells = &self.loaded()?.cells[task];
        let one = crate::tuners::build("one-shot", &toml::Table::new())?;
        let bound = |sigma: f64| {
            let declared = Declarations {
                training: Some(TrainingDeclaration {
                    run: cells.training_event(sigma)?,
                }),
                ..Declarations::of_space(&cells.task, Space::UnitBox { dim: 2 })
            };
            one.guarantee(&declared, self.tuning.delta, &self.tuning.accountant)
        };
        let sigma = smallest_run_noise("noise of the oracle's run", epsilon, |s| {
            bound(s).map(|g| g.bound())
        })?
        .value;
        let rung = self.rung_of(task, sigma, "the oracle")?;
        Ok((sigma, rung, bound(sigma)?.epsilon))
    }

    /// The σ the tuning study calibrates `cell`'s runs to (a tuner whose budget plan is to
    /// calibrate its runs: every one [`Study::check`] lets through).
    fn calibrated(&self, cell: &super::tuning::Cell) -> Result<f64> {
        let t = &self.tuning;
        let tuner = t.tuners[cell.tuner].tuner.as_ref();
        let target = t.budgets[cell.budget].unwrap_or(f64::NAN);
        let bound = |noise: f64| {
            let w = t.workload.instance(cell.variant, t.seed, 0, noise)?;
            let g = tuner.guarantee(&Declarations::of(w.as_ref()), t.delta, &t.accountant)?;
            Ok(g.bound())
        };
        Ok(smallest_run_noise("noise of each run", target, bound)?.value)
    }

    /// The rung `sigma` rounds up to, or why the table cannot replay it.
    fn rung_of(&self, task: usize, sigma: f64, who: &str) -> Result<usize> {
        let cells = &self.loaded()?.cells[task];
        let ladder = &cells.ladder;
        ladder.round_up(sigma).map(|r| r.0).ok_or_else(|| {
            Error::Infeasible(format!(
                "{who} calibrates σ = {} on {}, above the table's top rung {}: the table \
                 cannot replay it (raise its `ladder.highest`)",
                fmt_num(sigma),
                cells.task,
                fmt_num(*ladder.sigmas.last().unwrap_or(&0.0))
            ))
        })
    }
}

impl Study for DpsgdReplay {
    fn units(&self) -> Vec<String> {
        tuning_cells(&self.tuning)
            .into_iter()
            .map(|c| match self.loaded() {
                Ok(l) => format!("{} | table={:016x}", c.key, l.checksum),
                Err(_) => format!("{} | table unread", c.key),
            })
            .collect()
    }

    fn unit_count(&self) -> u64 {
        self.tuning.unit_count()
    }

    fn run_unit(&self, experiment: &str, i: usize) -> Result<Table> {
        self.run_unit_journaled(experiment, i, &mut Journal::none())
    }

    /// The tuning study's cell, its searches on their bootstrap tables, with the table's
    /// index, the rung replayed, the oracle's utility on that table and the price of tuning.
    fn run_unit_journaled(
        &self,
        experiment: &str,
        i: usize,
        journal: &mut Journal,
    ) -> Result<Table> {
        let cell = &tuning_cells(&self.tuning)[i];
        let task = cell.variant;
        let label = &self.tuning.tuners[cell.tuner].label;
        // A σ above the ladder replays no run (its scores are NaN, which the session refuses):
        // say why, from the calibration the cell made.
        let rows = run_cell(experiment, &self.tuning, cell, journal).map_err(|e| {
            match self
                .calibrated(cell)
                .and_then(|s| self.rung_of(task, s, label))
            {
                Err(above) => above,
                Ok(_) => e,
            }
        })?;
        let loaded = self.loaded()?;
        let cells = &loaded.cells[task];
        let epsilon = self.tuning.budgets[cell.budget].unwrap_or(f64::NAN);
        let sigma = rows
            .f64("noise")?
            .first()
            .copied()
            .flatten()
            .ok_or_else(|| Error::Infeasible(format!("{}: no calibrated noise", cell.key)))?;
        let rung = self.rung_of(task, sigma, label)?;
        let (_, oracle_rung, _) = self.oracle(task, epsilon)?;
        let oracles: Vec<f64> = loaded.draws[task]
            .iter()
            .map(|d| cells.best(Some(d.as_ref()), oracle_rung).0)
            .collect();
        let table_draw: Vec<u64> = rows.u64("seed")?.iter().map(|s| s % self.tables).collect();
        let price: Vec<Option<f64>> = rows
            .f64("utility")?
            .iter()
            .zip(&table_draw)
            .map(|(u, &b)| u.map(|u| oracles[b as usize] - u))
            .collect();
        let n = rows.height();
        Ok(rows
            .with(
                "replayed_sigma",
                Values::F64(vec![Some(cells.ladder.sigmas[rung]); n]),
            )
            .with(
                "oracle",
                Values::F64(
                    table_draw
                        .iter()
                        .map(|&b| Some(oracles[b as usize]))
                        .collect(),
                ),
            )
            .with("price", Values::F64(price))
            .with("table_draw", Values::U64(table_draw)))
    }

    fn output(&self) -> &'static str {
        "runs.parquet"
    }

    fn derive(&self, _experiment: &str, merged: &Table) -> Result<Vec<(&'static str, Table)>> {
        let bench = bench(merged)?;
        let mut out = vec![("oracle.parquet", self.oracle_table()?)];
        if let Some(path) = &self.live {
            let live = Table::read_parquet(Path::new(path)).map_err(|e| e.context(path))?;
            out.push(("live.parquet", live_check(&bench, &live)?));
        }
        out.insert(0, ("bench.parquet", bench));
        Ok(out)
    }

    fn derived(&self) -> Vec<&'static str> {
        let mut out = vec!["bench.parquet", "oracle.parquet"];
        if self.live.is_some() {
            out.push("live.parquet");
        }
        out
    }

    fn check(&self) -> std::result::Result<(), (String, Error)> {
        let loaded = self.loaded().map_err(|e| ("table".to_string(), e))?;
        self.tuning.check()?;
        // The replay calibrates runs; a tuner that spends its budget itself (GP-UCB's own
        // releases, propose-test's share) needs evaluations the table does not hold.
        let first = self.tuning.budgets[0].unwrap_or(f64::NAN);
        for (i, entry) in self.tuning.tuners.iter().enumerate() {
            let plan = entry
                .tuner
                .budget_plan(first, self.tuning.delta)
                .map_err(|e| (format!("tuners[{i}]"), e))?;
            if !matches!(plan, BudgetPlan::CalibrateRuns) {
                return Err((
                    format!("tuners[{i}]"),
                    Error::invalid(
                        "tuner",
                        entry.tuner.name(),
                        "a tuner whose runs are calibrated to the budget (the table holds \
                         training runs only)",
                    ),
                ));
            }
        }
        for t in 0..loaded.cells.len() {
            for e in self.tuning.budgets.iter().flatten() {
                self.oracle(t, *e).map_err(|e| ("table".to_string(), e))?;
            }
        }
        Ok(())
    }
}

/// One row of `bench.parquet`: a (task, tuner, budget) cell over its searches, each interval
/// the blocked t over the bootstrap tables and searches.
#[derive(serde::Serialize)]
struct BenchRow {
    variant: String,
    label: String,
    tuner: String,
    target_epsilon: f64,
    epsilon: Option<f64>,
    noise: Option<f64>,
    replayed_sigma: Option<f64>,
    searches: u64,
    tables: u64,
    runs: Option<f64>,
    nothing: Option<f64>,
    utility: Option<f64>,
    utility_lo: Option<f64>,
    utility_hi: Option<f64>,
    regret: Option<f64>,
    regret_lo: Option<f64>,
    regret_hi: Option<f64>,
    oracle: Option<f64>,
    price: Option<f64>,
    price_lo: Option<f64>,
    price_hi: Option<f64>,
}

/// The per-cell summaries of the merged searches.
fn bench(t: &Table) -> Result<Table> {
    let (variant, label, tuner) = (t.str("variant")?, t.str("label")?, t.str("tuner")?);
    let eps = t.f64("target_epsilon")?;
    let draw = t.u64("table_draw")?;
    let runs = t.u64("runs")?;
    let fallback = t.bool("fallback")?;
    let cols = [
        "utility",
        "regret",
        "price",
        "oracle",
        "epsilon",
        "noise",
        "replayed_sigma",
    ];
    let values: Vec<&[Option<f64>]> = cols.iter().map(|c| t.f64(c)).collect::<Result<_>>()?;
    let mut groups: BTreeMap<(String, String, u64), Vec<usize>> = BTreeMap::new();
    for r in 0..t.height() {
        let e = eps[r].unwrap_or(f64::NAN).to_bits();
        groups
            .entry((variant[r].clone(), label[r].clone(), e))
            .or_default()
            .push(r);
    }
    let mut out = Vec::new();
    for ((v, l, e), rows) in groups {
        let interval = |c: usize| -> Result<(Option<f64>, Option<f64>, Option<f64>)> {
            let xs: Vec<(u64, f64)> = rows
                .iter()
                .filter_map(|&r| values[c][r].map(|x| (draw[r], x)))
                .collect();
            if xs.is_empty() {
                return Ok((None, None, None));
            }
            let t = blocked_t(&xs)?;
            Ok((
                Some(t.estimate),
                t.lo.or(Some(t.estimate)),
                t.hi.or(Some(t.estimate)),
            ))
        };
        let mean_of =
            |xs: Vec<f64>| (!xs.is_empty()).then(|| xs.iter().sum::<f64>() / xs.len() as f64);
        let (utility, utility_lo, utility_hi) = interval(0)?;
        let (regret, regret_lo, regret_hi) = interval(1)?;
        let (price, price_lo, price_hi) = interval(2)?;
        let first = rows[0];
        out.push(BenchRow {
            variant: v,
            label: l,
            tuner: tuner[first].clone(),
            target_epsilon: f64::from_bits(e),
            epsilon: values[4][first],
            noise: values[5][first],
            replayed_sigma: values[6][first],
            searches: rows.len() as u64,
            tables: {
                let mut d: Vec<u64> = rows.iter().map(|&r| draw[r]).collect();
                d.sort_unstable();
                d.dedup();
                d.len() as u64
            },
            runs: mean_of(rows.iter().map(|&r| runs[r] as f64).collect()),
            nothing: mean_of(
                rows.iter()
                    .map(|&r| f64::from(u8::from(fallback[r])))
                    .collect(),
            ),
            utility,
            utility_lo,
            utility_hi,
            regret,
            regret_lo,
            regret_hi,
            oracle: mean_of(rows.iter().filter_map(|&r| values[3][r]).collect()),
            price,
            price_lo,
            price_hi,
        });
    }
    Table::from_rows(&out)
}

/// One row of `live.parquet`: a (task, tuner, budget) cell of both the replay and the live
/// benchmark.
#[derive(serde::Serialize)]
struct LiveRow {
    variant: String,
    label: String,
    target_epsilon: f64,
    /// The live cell: its repetitions, mean utility and Student-t interval.
    live_n: u64,
    live: f64,
    live_lo: Option<f64>,
    live_hi: Option<f64>,
    /// The live σ against the replay's: equal calibrations (same tuner, budget and run), the
    /// replay then rounded up to `replayed_sigma`.
    live_noise: Option<f64>,
    noise: Option<f64>,
    replayed_sigma: Option<f64>,
    replay: Option<f64>,
    replay_lo: Option<f64>,
    replay_hi: Option<f64>,
    /// live − replay, its half-width √(h_live² + h_replay²) of the two 95% half-widths, and
    /// whether the live mean lies in the replay's interval.
    difference: Option<f64>,
    difference_lo: Option<f64>,
    difference_hi: Option<f64>,
    inside: bool,
}

/// The replay's cells against the live benchmark's (`tuning` rows of the same variants and
/// labels): every cell both have.
fn live_check(bench: &Table, live: &Table) -> Result<Table> {
    use crate::numeric::stats::one_sample_t;
    let (variant, label) = (live.str("variant")?, live.str("label")?);
    let (eps, utility, noise) = (
        live.f64("target_epsilon")?,
        live.f64("utility")?,
        live.f64("noise")?,
    );
    // Per (variant, label, bits of ε): the live utilities and the cell's σ.
    type Live = (Vec<f64>, Option<f64>);
    let mut groups: BTreeMap<(String, String, u64), Live> = BTreeMap::new();
    for r in 0..live.height() {
        let (Some(e), Some(u)) = (eps[r], utility[r]) else {
            continue;
        };
        let g = groups
            .entry((variant[r].clone(), label[r].clone(), e.to_bits()))
            .or_default();
        g.0.push(u);
        g.1 = noise[r];
    }
    let (bv, bl, be) = (
        bench.str("variant")?,
        bench.str("label")?,
        bench.f64("target_epsilon")?,
    );
    let col = |c: &str| bench.f64(c);
    let (m, lo, hi, bn, rs) = (
        col("utility")?,
        col("utility_lo")?,
        col("utility_hi")?,
        col("noise")?,
        col("replayed_sigma")?,
    );
    let mut out = Vec::new();
    for r in 0..bench.height() {
        let Some(e) = be[r] else { continue };
        let Some((values, live_noise)) = groups.get(&(bv[r].clone(), bl[r].clone(), e.to_bits()))
        else {
            continue;
        };
        let t = one_sample_t(values)?;
        let difference = m[r].map(|x| t.estimate - x);
        // Each interval's half-width at its own df, combined as independent errors add
        // (no wider than the two intervals side by side, no narrower than either).
        let half = |lo: Option<f64>, hi: Option<f64>| Some((hi? - lo?) / 2.0);
        let (difference_lo, difference_hi) =
            match (difference, half(t.lo, t.hi), half(lo[r], hi[r])) {
                (Some(d), Some(a), Some(b)) => {
                    let h = (a * a + b * b).sqrt();
                    (Some(d - h), Some(d + h))
                }
                _ => (None, None),
            };
        out.push(LiveRow {
            variant: bv[r].clone(),
            label: bl[r].clone(),
            target_epsilon: e,
            live_n: values.len() as u64,
            live: t.estimate,
            live_lo: t.lo,
            live_hi: t.hi,
            live_noise: *live_noise,
            noise: bn[r],
            replayed_sigma: rs[r],
            replay: m[r],
            replay_lo: lo[r],
            replay_hi: hi[r],
            difference,
            difference_lo,
            difference_hi,
            inside: matches!((lo[r], hi[r]), (Some(l), Some(h)) if l <= t.estimate && t.estimate <= h),
        });
    }
    Table::from_rows(&out)
}

/// One row of `oracle.parquet`.
#[derive(serde::Serialize)]
struct OracleRow {
    variant: String,
    target_epsilon: f64,
    epsilon: f64,
    noise: f64,
    replayed_sigma: f64,
    /// The best configuration on the table itself.
    eta: f64,
    clip: f64,
    /// On the table itself, and over the bootstrap tables (their mean and blocked interval).
    accuracy: f64,
    oracle: f64,
    oracle_lo: Option<f64>,
    oracle_hi: Option<f64>,
}

impl DpsgdReplay {
    fn oracle_table(&self) -> Result<Table> {
        let mut out = Vec::new();
        let loaded = self.loaded()?;
        for (t, cells) in loaded.cells.iter().enumerate() {
            let draws = &loaded.draws[t];
            for e in self.tuning.budgets.iter().flatten() {
                let (sigma, rung, epsilon) = self.oracle(t, *e)?;
                let (accuracy, (i, j)) = cells.best(None, rung);
                let by_table: Vec<(u64, f64)> = (0..)
                    .zip(draws)
                    .map(|(b, d)| (b, cells.best(Some(d.as_ref()), rung).0))
                    .collect();
                let b = blocked_t(&by_table)?;
                out.push(OracleRow {
                    variant: cells.task.clone(),
                    target_epsilon: *e,
                    epsilon,
                    noise: sigma,
                    replayed_sigma: cells.ladder.sigmas[rung],
                    eta: cells.learning_rate[i],
                    clip: cells.clip[j],
                    accuracy,
                    oracle: b.estimate,
                    oracle_lo: b.lo,
                    oracle_hi: b.hi,
                });
            }
        }
        Table::from_rows(&out)
    }
}
