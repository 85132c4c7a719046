//! Tuning experiments: the cells (tuner × workload variant × budget), equal-budget calibration,
//! and the rows of one cell (one per repetition).
//!
//! Randomness: repetition `rep` of variant `v` uses the same workload instance (objective,
//! candidate grid) for every tuner and budget, so tuners are compared on common random
//! numbers; the tuner's own draws come from a stream keyed by the cell's content (not its
//! position in the file) and `rep`. Nothing depends on thread count or sharding.

use super::experiment::{fnv1a, Tuning};
use super::table::{finite, Table, Values};
use crate::accounting::{smallest_meeting, DpBound};
use crate::error::{Error, Result};
use crate::numeric::fmt_num;
use crate::rng::stream;
use crate::tuners::{Guarantee, Tuner};
use std::time::Instant;

/// Stream tag of tuners' own draws.
const TUNE_STREAM: u64 = 0x7475_6e65;

/// One unit of work: every repetition of one tuner on one workload variant at one budget.
#[derive(Clone, Debug, PartialEq)]
pub struct Cell {
    pub tuner: usize,
    pub variant: usize,
    pub budget: usize,
    /// Human-readable identity, e.g. `papernot-steinke (logarithmic, mean=10) | d=2 | eps=1`.
    pub key: String,
    /// Stable hash of `key`: the part file name and the stream id.
    pub id: u64,
}

/// All cells in canonical order (variant, budget, tuner): the order of the merged results.
pub fn cells(t: &Tuning) -> Vec<Cell> {
    let variants = t.workload.variants();
    let mut out = Vec::new();
    for (v, variant) in variants.iter().enumerate() {
        for (b, budget) in t.budgets.iter().enumerate() {
            for (i, tuner) in t.tuners.iter().enumerate() {
                let eps = budget.map_or("own noise".to_string(), |e| format!("eps={}", fmt_num(e)));
                let key = format!("{} | {} | {}", tuner.label, variant.label, eps);
                out.push(Cell {
                    tuner: i,
                    variant: v,
                    budget: b,
                    id: fnv1a(key.as_bytes()),
                    key,
                });
            }
        }
    }
    out
}

/// The tuner of `cell` and the noise of each private run. In equal-budget mode a tuner whose
/// privacy comes from its own releases (GP-UCB) is configured for the target (ε, δ) and the
/// runs' noise plays no part (`None`; instances get the workload's default or 1); a tuner that
/// spends a share itself (propose-test) is configured for its share; every other tuner is used
/// as written. Those two get the smallest noise at which their guarantee meets the target.
struct Setup<'a> {
    own: Option<Box<dyn Tuner>>,
    written: &'a dyn Tuner,
    noise: Option<f64>,
}

impl Setup<'_> {
    fn tuner(&self) -> &dyn Tuner {
        self.own.as_deref().unwrap_or(self.written)
    }
    fn instance_noise(&self, t: &Tuning) -> f64 {
        self.noise.or(t.workload.default_noise()).unwrap_or(1.0)
    }
}

fn setup<'a>(t: &'a Tuning, cell: &Cell) -> Result<Setup<'a>> {
    let entry = &t.tuners[cell.tuner];
    let written = entry.tuner.as_ref();
    let Some(target) = t.budgets[cell.budget] else {
        let noise = t
            .workload
            .default_noise()
            .ok_or_else(|| Error::invalid("noise", "missing", "a number"))?;
        return Ok(Setup {
            own: None,
            written,
            noise: Some(noise),
        });
    };
    if let Some(own) = written.at_budget(target, t.delta) {
        return Ok(Setup {
            own: Some(own),
            written,
            noise: None,
        });
    }
    let share = written.own_share_at_budget(target, t.delta);
    let calibrated = share.as_deref().unwrap_or(written);
    let bound = |noise: f64| -> Result<DpBound> {
        let g = guarantee(t, cell, calibrated, noise)?;
        Ok(DpBound {
            epsilon: g.epsilon,
            delta: g.delta,
            order: None,
        })
    };
    let noise = smallest_meeting("noise of each run", bound, target, 1.0, 1e12, 1e-6)
        .map(|c| c.value)
        .map_err(|e| {
            Error::Infeasible(format!(
                "{}: calibrating to ε = {}: {e}",
                entry.label,
                fmt_num(target)
            ))
        })?;
    Ok(Setup {
        own: share,
        written,
        noise: Some(noise),
    })
}

/// The guarantee of `tuner` in `cell` with runs at `noise` (data-independent: instance 0
/// serves).
fn guarantee(t: &Tuning, cell: &Cell, tuner: &dyn Tuner, noise: f64) -> Result<Guarantee> {
    let w = t.workload.instance(cell.variant, t.seed, 0, noise)?;
    tuner.guarantee(w.as_ref(), t.delta, &t.accountant)
}

/// Runs every repetition of `cell`: one row per run.
pub fn run_cell(experiment: &str, t: &Tuning, cell: &Cell) -> Result<Table> {
    let entry = &t.tuners[cell.tuner];
    let variant = &t.workload.variants()[cell.variant];
    let setup = setup(t, cell)?;
    let tuner = setup.tuner();
    let noise = setup.instance_noise(t);
    let g = guarantee(t, cell, tuner, noise)?;
    if let Some(target) = t.budgets[cell.budget] {
        // The calibration verified this; a guarantee above the target would be a privacy bug.
        if g.epsilon > target || g.delta > t.delta {
            return Err(Error::Infeasible(format!(
                "{}: (ε, δ) = ({}, {}) exceeds the budget ({target}, {})",
                cell.key, g.epsilon, g.delta, t.delta
            )));
        }
    }
    let n = t.seeds as usize;
    let mut rows = Rows::with_capacity(n);
    for rep in 0..t.seeds {
        let w = t.workload.instance(cell.variant, t.seed, rep, noise)?;
        let mut rng = stream(t.seed, &[TUNE_STREAM, cell.id, rep]);
        let start = Instant::now();
        let outcome = tuner.tune(w.as_ref(), &mut rng)?;
        let wall = start.elapsed().as_secs_f64() * 1e3;
        let fallback = outcome.chosen.is_none() || outcome.fallback;
        let chosen = outcome.chosen.unwrap_or_else(|| w.space().default_point());
        let utility = w.oracle().utility(&chosen);
        let best = w.oracle().best_utility();
        rows.seed.push(rep);
        rows.utility.push(finite(utility));
        rows.best.push(finite(best));
        rows.regret.push(finite(best - utility));
        rows.released.push(outcome.released_score.and_then(finite));
        rows.runs.push(outcome.runs);
        rows.passes.push(outcome.passes.map(|p| p as f64));
        rows.fallback.push(fallback);
        rows.wall.push(finite(wall));
    }
    let same_str = |s: &str| Values::Str(vec![s.to_string(); n]);
    let same_f64 = |x: Option<f64>| Values::F64(vec![x; n]);
    Ok(Table::default()
        .with("experiment", same_str(experiment))
        .with("cell", same_str(&format!("{:016x}", cell.id)))
        .with("tuner", same_str(tuner.name()))
        .with("tuner_params", same_str(&tuner.params()))
        .with("label", same_str(&entry.label))
        .with("workload", same_str(t.workload.kind()))
        .with("workload_params", same_str(&t.workload.params()))
        .with("variant", same_str(&variant.label))
        .with("dim", Values::U64(vec![variant.dim; n]))
        .with("target_epsilon", same_f64(t.budgets[cell.budget]))
        .with("noise", same_f64(setup.noise.and_then(finite)))
        .with("seed", Values::U64(rows.seed))
        .with("epsilon", same_f64(finite(g.epsilon)))
        .with("delta", same_f64(finite(g.delta)))
        .with("theorem", same_str(&g.theorem))
        .with("utility", Values::F64(rows.utility))
        .with("best_utility", Values::F64(rows.best))
        .with("regret", Values::F64(rows.regret))
        .with("released_score", Values::F64(rows.released))
        .with("runs", Values::U64(rows.runs))
        .with("passes_data_dependent", Values::F64(rows.passes))
        .with("fallback", Values::Bool(rows.fallback))
        .with("wall_ms", Values::F64(rows.wall)))
}

#[derive(Default)]
struct Rows {
    seed: Vec<u64>,
    utility: Vec<Option<f64>>,
    best: Vec<Option<f64>>,
    regret: Vec<Option<f64>>,
    released: Vec<Option<f64>>,
    runs: Vec<u64>,
    passes: Vec<Option<f64>>,
    fallback: Vec<bool>,
    wall: Vec<Option<f64>>,
}

impl Rows {
    fn with_capacity(n: usize) -> Self {
        let mut r = Rows::default();
        r.seed.reserve(n);
        r
    }
}
