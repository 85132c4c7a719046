//! The tabular benchmark's replay (issue 64): a `dpsgd-table` indexed by cell, and a tuner's
//! runs answered from it instead of trained.

use super::dpsgd_table::{Ladder, TableRow};
use crate::accounting::Event;
use crate::error::{Error, Result};

/// One task's table indexed for replay: the accuracies of run (rung, i, j, s), the initial
/// models' mean accuracy (⊥), and the sizes a run's privacy depends on.
#[derive(Clone, Debug, PartialEq)]
pub struct Cells {
    pub task: String,
    pub grid: usize,
    pub ladder: Ladder,
    pub seeds: usize,
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
            initial += r.initial_accuracy;
        }
        Ok(Cells {
            task: task.to_string(),
            grid,
            ladder: Ladder { sigmas },
            seeds,
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
        let sgd = crate::accounting::DpSgd::without_replacement(
            self.train_size,
            self.lot_size,
            sigma,
            self.epochs,
        )?;
        let release = self.release(sigma)?;
        Event::composed(vec![Event::dpsgd(&sgd)?, Event::of_gaussian(&release)])
    }

    /// The score's release at noise multiplier `sigma`: sensitivity 1/t, sd σ/t.
    pub fn release(&self, sigma: f64) -> Result<crate::accounting::Gaussian> {
        let t = self.test_size as f64;
        crate::accounting::Gaussian::new(1.0 / t, sigma / t)
    }
}

/// A tuner's trials answered from the table: the run at the grid point nearest to the trial's
/// u, at `rung` (σ rounded up to the ladder: the run is at least as noisy as the one the
/// guarantee was calibrated for), a seed of the cell drawn uniformly, and its accuracy
/// released as the live workload releases it, with the noise of `release` drawn now. A point
/// outside the square releases 0 plus the same noise, as the live workload does.
pub struct Replay<'a> {
    pub cells: &'a Cells,
    /// The rung the calibrated σ was rounded up to ([`Ladder::round_up`]).
    pub rung: usize,
    /// The score's release the guarantee was calibrated with ([`Cells::release`] at the
    /// calibrated σ, not the rung's): exactly the live release of that calibration.
    pub release: crate::accounting::Gaussian,
}

impl Replay<'_> {
    /// The grid point nearest to the trial's u (None outside the square).
    pub fn point(&self, u: &[f64]) -> Option<(usize, usize)> {
        match u {
            [a, b] => Some((self.cells.nearest(*a)?, self.cells.nearest(*b)?)),
            _ => None,
        }
    }
}

impl crate::session::Evaluator for Replay<'_> {
    fn evaluate(
        &self,
        trial: &crate::session::Trial,
        rng: &mut dyn rand::RngCore,
    ) -> Result<crate::session::Told> {
        if trial.evaluation != crate::session::Evaluation::Train {
            return Err(Error::Infeasible(format!(
                "the table holds training runs' scores, not {}",
                trial.evaluation.what()
            )));
        }
        let score = match self.point(&trial.hyper) {
            Some((i, j)) => {
                let s = crate::data::uniform_below(rng, self.cells.seeds as u64) as usize;
                self.cells.accuracy(self.rung, i, j, s)
            }
            None => 0.0,
        };
        Ok(crate::session::Told::Score(score + self.release.noise(rng)))
    }
}
