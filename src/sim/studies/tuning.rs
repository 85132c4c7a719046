//! Tuning experiments (`kind = "tuning"`): the cells (tuner × workload variant × budget), each a
//! unit of the runner; equal-budget calibration; the rows of one cell (one per repetition); the
//! tables derived from them (`outcomes.parquet`, `steps.parquet`, `cells.parquet` and, with a
//! front, `front.parquet`), over which the files declare every table and figure.
//!
//! Randomness: repetition `rep` of variant `v` uses the same workload instance (objective,
//! candidate grid) for every tuner and budget, so tuners are compared on common random
//! numbers; the tuner's own draws come from a stream keyed by its registry name, the canonical
//! text of its parameters, the variant's dimension and `rep`: not by its position in the file,
//! its label or display text, nor by the budget (common random numbers across ε). Nothing
//! depends on thread count or sharding.

use super::StudyKind;
use crate::accounting::{smallest_run_noise, Accountant};
use crate::error::{fmt_num, Error, Range, Result};
use crate::numeric::stats::mean_interval;
use crate::params::{Count, OneOrMany};
use crate::pareto::front::StepFront;
use crate::rng::stream;
use crate::sim::fields::{fnv1a, Fields};
use crate::sim::report::{best_known, quantile};
use crate::sim::store::Journal;
use crate::sim::study::Study;
use crate::sim::table::{finite, Table, Values};
use crate::tuners::{BudgetPlan, Guarantee, Tuner, PASSES};
use crate::workloads::{Declarations, WorkloadSpec};
use std::path::Path;
use std::time::Instant;

pub const KIND: StudyKind = StudyKind {
    source: file!(),
    name: "tuning",
    about:
        "tuners × workload variants × budgets × repetitions: regret, utility and privacy per tuner",
    parse: |f| Ok(Box::new(parse(f)?)),
};

/// The `chosen` text of a run that released nothing (⊥).
pub const NOTHING: &str = "nothing released";

/// The `chosen` text of a point: `name=value` pairs separated by spaces, each value in full
/// precision (Rust's shortest round-trip form), so [`chosen_values`] reads it back exactly.
pub fn chosen_text(coordinates: &[(String, f64)]) -> String {
    let parts: Vec<String> = coordinates
        .iter()
        .map(|(name, v)| format!("{name}={v}"))
        .collect();
    parts.join(" ")
}

/// The named coordinates of a `chosen` text; `None` for [`NOTHING`] or a text not written by
/// [`chosen_text`].
pub fn chosen_values(text: &str) -> Option<Vec<(&str, f64)>> {
    text.split_whitespace()
        .map(|pair| {
            let (name, value) = pair.split_once('=')?;
            Some((name, value.parse().ok()?))
        })
        .collect::<Option<Vec<_>>>()
        .filter(|v| !v.is_empty())
}

/// Stream tag of tuners' own draws.
const TUNE_STREAM: u64 = 0x7475_6e65;

/// Tuners × workload variants × budgets × repetitions.
pub struct Tuning {
    pub seed: u64,
    pub seeds: u64,
    pub delta: f64,
    pub accountant: Accountant,
    /// Target ε per budget in equal-budget mode; `[None]` runs at the workload's own noise.
    pub budgets: Vec<Option<f64>>,
    pub workload: Box<dyn WorkloadSpec>,
    pub tuners: Vec<TunerEntry>,
    /// `front`: the non-private reference each variant's accuracy is measured against.
    pub front: Option<ReferenceFront>,
}

/// The non-private reference of a DP-SGD benchmark (`front = "<dir>/points.parquet"`): the
/// points (task, ε, error) of a `pareto-front` study, one union front per task, read as a step
/// function: the lowest error any one run of ε ≤ e reached, its hyperparameters chosen for free.
/// Each variant's label names its task, and the utility must be a test accuracy (error =
/// 1 − utility), as the `dpsgd-task` workload's is. Where the study re-evaluated its fronts on
/// fresh runs (`reevaluate`, column `reeval_error`), those errors are the yardstick: a front
/// that keeps the best of many noisy means is optimistic, and a private tuner's outcome is a
/// fresh run.
pub struct ReferenceFront {
    pub path: String,
    /// The fronts are the re-evaluated ones.
    pub reevaluated: bool,
    fronts: Vec<(String, StepFront)>,
    /// The fronts as searched (the same as `fronts` when not re-evaluated).
    searched: Vec<(String, StepFront)>,
}

impl ReferenceFront {
    /// The fronts of `tasks` from the points file at `path`; a task without points is an error.
    pub fn load(path: &str, tasks: &[String]) -> Result<Self> {
        let t = Table::read_parquet(Path::new(path))?;
        let (task, eps, err) = (t.str("task")?, t.f64("epsilon")?, t.f64("error")?);
        let fresh = t.f64_if_any("reeval_error")?;
        let front_of = |name: &str, errors: &[Option<f64>]| {
            let points: Vec<[f64; 2]> = (0..t.height())
                .filter(|&i| task[i] == name)
                .filter_map(|i| Some([eps[i]?, errors[i]?]))
                .collect();
            StepFront::new(&points)
        };
        let mut fronts = Vec::new();
        let mut searched = Vec::new();
        for name in tasks {
            if !task.iter().any(|t| t == name) {
                return Err(Error::invalid(
                    "front",
                    path,
                    format!("a points file with (ε, error) points of task `{name}`"),
                ));
            }
            let as_searched = front_of(name, err)?;
            fronts.push((
                name.clone(),
                match fresh {
                    Some(f) => front_of(name, f)?,
                    None => as_searched.clone(),
                },
            ));
            searched.push((name.clone(), as_searched));
        }
        Ok(ReferenceFront {
            path: path.to_string(),
            reevaluated: fresh.is_some(),
            fronts,
            searched,
        })
    }

    /// The lowest error on `task`'s front at ε ≤ `epsilon` (None: no point that private):
    /// the re-evaluated front where there is one.
    pub fn best_error(&self, task: &str, epsilon: f64) -> Option<f64> {
        Self::best(&self.fronts, task, epsilon)
    }

    /// The same on the front as searched (optimistic when the study re-evaluated it).
    pub fn searched_best_error(&self, task: &str, epsilon: f64) -> Option<f64> {
        Self::best(&self.searched, task, epsilon)
    }

    fn best(fronts: &[(String, StepFront)], task: &str, epsilon: f64) -> Option<f64> {
        fronts
            .iter()
            .find(|(t, _)| t == task)
            .and_then(|(_, f)| f.best_at(epsilon))
    }
}

pub struct TunerEntry {
    /// A label unique in the file (defaults to the registry name and its parameters).
    pub label: String,
    pub tuner: Box<dyn Tuner>,
    /// The registry name and the canonical text of the parameters as written
    /// ([`crate::params::canonical`]), less `accountant`: the key of the tuner's streams. The
    /// accountant bounds the runs and draws nothing, so tuners that differ only in it draw
    /// the same numbers (common random numbers: their rows differ by the noise alone).
    pub canonical: String,
}

/// The `[[tuners]]` of a file: each built from the registry, labelled (the label defaults to
/// the registry name and its parameters), no label and no tuner listed twice.
pub(crate) fn tuner_entries(f: &Fields) -> Result<Vec<TunerEntry>> {
    let mut tuners: Vec<TunerEntry> = Vec::new();
    let mut written: Vec<String> = Vec::new();
    for tf in f.array("tuners", true)? {
        let table = tf.table;
        let name = tf
            .string("tuner")?
            .ok_or_else(|| tf.missing("tuner", "a registry name such as `papernot-steinke`"))?;
        let label = tf.string("label")?.map(str::to_string);
        let mut params = table.clone();
        params.remove("tuner");
        params.remove("label");
        let tuner = crate::tuners::build(name, &params).map_err(|e| tf.wrap(e))?;
        let label = label.unwrap_or_else(|| format!("{name} ({})", tuner.params()));
        if tuners.iter().any(|t| t.label == label) {
            return Err(tf.bad(
                "label",
                &format!("`{label}` is used twice; give each tuner a distinct label"),
            ));
        }
        let as_written = format!("{name:?}{}", crate::params::canonical(&params));
        let mut drawn = params.clone();
        drawn.remove("accountant");
        let canonical = format!("{name:?}{}", crate::params::canonical(&drawn));
        if let Some(i) = written.iter().position(|w| *w == as_written) {
            let twin = &tuners[i];
            return Err(tf.bad(
                "tuner",
                &format!(
                    "the same tuner and parameters as `{}`: it would repeat its results \
                     exactly; list it once",
                    twin.label
                ),
            ));
        }
        written.push(as_written);
        tuners.push(TunerEntry {
            label,
            tuner,
            canonical,
        });
    }
    Ok(tuners)
}

/// A `tuning` experiment file's parameters (its `[workload]` and `[[tuners]]` aside).
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    seed: Option<u64>,
    seeds: Option<Count>,
    delta: Option<f64>,
    orders: Option<String>,
    conversion: Option<String>,
    budget: Option<Budget>,
    /// A reference front (CSV) to measure the tuners' accuracies against.
    front: Option<String>,
}

/// The `[budget]` table: the target ε of each equal-budget column.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Budget {
    epsilons: OneOrMany<f64>,
}

fn parse(f: &Fields) -> Result<Tuning> {
    let p: Params = f.read("a `tuning` experiment", &["workload", "tuners"])?;
    let seed = p.seed.unwrap_or(0);
    let seeds = f.seeds(
        p.seeds
            .ok_or_else(|| f.missing("seeds", "the number of repetitions, >= 1"))?,
    )?;
    let delta = f.in_range("delta", p.delta.unwrap_or(1e-6), Range::OpenUnit)?;
    let accountant = f.accountant_of(p.orders.as_deref(), p.conversion.as_deref())?;
    let budgets = match p.budget {
        None => vec![None],
        Some(b) => {
            let eps = b.epsilons.into_vec();
            if let Some(e) = eps.iter().find(|e| !Range::Positive.contains(**e)) {
                return Err(f.bad(
                    "budget.epsilons",
                    &format!("{} is invalid: must be {}", fmt_num(*e), Range::Positive),
                ));
            }
            if let Some(e) = eps
                .iter()
                .enumerate()
                .find_map(|(i, e)| eps[..i].contains(e).then_some(e))
            {
                return Err(f.bad(
                    "budget.epsilons",
                    &format!(
                        "{} is listed twice; each budget is one column of the results",
                        fmt_num(*e)
                    ),
                ));
            }
            eps.into_iter().map(Some).collect()
        }
    };
    let (workload, w) = f.workload()?;
    if budgets == [None] && workload.default_noise().is_none() {
        return Err(w.missing(
            "noise",
            "the noise of each private run (or give a [budget] to calibrate it)",
        ));
    }
    let tuners = tuner_entries(f)?;
    let front = match p.front {
        None => None,
        Some(_) if workload.kind() != "dpsgd-task" => {
            return Err(f.bad(
                "front",
                "only for a workload whose utility is a test accuracy (`dpsgd-task`)",
            ))
        }
        Some(path) => {
            let tasks: Vec<String> = workload.variants().into_iter().map(|v| v.label).collect();
            Some(ReferenceFront::load(&path, &tasks).map_err(|e| f.wrap(e))?)
        }
    };
    Ok(Tuning {
        seed,
        seeds,
        delta,
        accountant,
        budgets,
        workload,
        tuners,
        front,
    })
}

/// One unit of work: every repetition of one tuner on one workload variant at one budget.
#[derive(Clone, Debug, PartialEq)]
pub struct Cell {
    pub tuner: usize,
    pub variant: usize,
    pub budget: usize,
    /// Human-readable identity, e.g. `papernot-steinke (logarithmic, mean=10) | d=2 | eps=1`.
    pub key: String,
    /// Stable hash of `key`: the `cell` column.
    pub id: u64,
    /// The id of the tuner's streams: a hash of the tuner's canonical parameters and the
    /// variant's dimension, never of display text (labels, `params()`), and not of the budget,
    /// so every budget of a tuner uses common random numbers.
    pub stream: u64,
}

/// All cells in canonical order (variant, budget, tuner): the order of the merged results.
/// The most rows (cells × repetitions) one tuning experiment may plan.
const MAX_ROWS: u64 = 10_000_000;

pub fn cells(t: &Tuning) -> Vec<Cell> {
    let variants = t.workload.variants();
    let mut out = Vec::new();
    for (v, variant) in variants.iter().enumerate() {
        for (b, budget) in t.budgets.iter().enumerate() {
            for (i, tuner) in t.tuners.iter().enumerate() {
                let eps = budget.map_or("own noise".to_string(), |e| format!("eps={}", fmt_num(e)));
                let key = format!("{} | {} | {}", tuner.label, variant.label, eps);
                let stream = format!("{} | dim={}", tuner.canonical, variant.dim);
                out.push(Cell {
                    tuner: i,
                    variant: v,
                    budget: b,
                    id: fnv1a(key.as_bytes()),
                    stream: fnv1a(stream.as_bytes()),
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
    let share = match written.budget_plan(target, t.delta)? {
        BudgetPlan::Own(own) => {
            return Ok(Setup {
                own: Some(own),
                written,
                noise: None,
            })
        }
        BudgetPlan::OwnShareThenRuns(share) => Some(share),
        BudgetPlan::CalibrateRuns => None,
    };
    let calibrated = share.as_deref().unwrap_or(written);
    let bound = |noise: f64| guarantee(t, cell, calibrated, noise).map(|g| g.bound());
    let noise = smallest_run_noise("noise of each run", target, bound)
        .map(|c| c.value)
        .map_err(|e| {
            e.context(&format!(
                "{}: calibrating to ε = {}",
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
    tuner.guarantee(&Declarations::of(w.as_ref()), t.delta, &t.accountant)
}

/// Runs every repetition of `cell`: one row per run. Each repetition's row is recorded in
/// `journal` as it is made, and a repetition on record is not run again (repetitions draw
/// from their own streams, so skipping one changes nothing else).
pub fn run_cell(experiment: &str, t: &Tuning, cell: &Cell, journal: &mut Journal) -> Result<Table> {
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
    let mut outcomes = Vec::with_capacity(t.seeds as usize);
    for rep in 0..t.seeds {
        // A record is `[rep, outcome]`; one that is not this repetition's (a changed file or
        // dptune) is dropped with those after it.
        let recorded = journal.records().get(rep as usize).and_then(|r| {
            serde_json::from_value::<(u64, Outcome)>(r.clone())
                .ok()
                .filter(|(seed, _)| *seed == rep)
        });
        if let Some((_, outcome)) = recorded {
            outcomes.push(outcome);
            continue;
        }
        if journal.records().len() > rep as usize {
            journal.truncate(rep as usize)?;
        }
        let w = t.workload.instance(cell.variant, t.seed, rep, noise)?;
        let mut rng = stream(t.seed, &[TUNE_STREAM, cell.stream, rep]);
        let start = Instant::now();
        let outcome = tuner.tune(w.as_ref(), &mut rng)?;
        let wall = start.elapsed().as_secs_f64() * 1e3;
        // Nothing released (K = 0, a halt) is ⊥, never a model trained on the private data.
        let (utility, chosen) = match &outcome.chosen {
            Some(h) => (w.oracle().utility(h), chosen_text(&w.coordinates(h))),
            None => (w.utility_of_nothing(), NOTHING.to_string()),
        };
        let best = w.oracle().best_utility();
        let row = Outcome {
            chosen,
            utility: finite(utility),
            best_utility: finite(best),
            regret: finite(best - utility),
            released_score: outcome.released_score.and_then(finite),
            runs: outcome.runs,
            passes_data_dependent: outcome.diagnostic(PASSES),
            fallback: outcome.chosen.is_none() || outcome.fallback,
            wall_ms: finite(wall),
        };
        journal.append(serde_json::json!([rep, row]))?;
        outcomes.push(row);
    }
    let cell_id = format!("{:016x}", cell.id);
    let (tuner_params, workload_params) = (tuner.params(), t.workload.params());
    let rows: Vec<Row> = (0..)
        .zip(outcomes)
        .map(|(seed, outcome)| Row {
            cell: &cell_id,
            tuner: tuner.name(),
            tuner_params: &tuner_params,
            label: &entry.label,
            workload: t.workload.kind(),
            workload_params: &workload_params,
            variant: &variant.label,
            dim: variant.dim,
            target_epsilon: t.budgets[cell.budget],
            noise: setup.noise.and_then(finite),
            seed,
            epsilon: finite(g.epsilon),
            delta: finite(g.delta),
            theorem: &g.theorem,
            outcome,
        })
        .collect();
    Table::from_experiment_rows(experiment, &rows)
}

/// One row of a tuning table: one repetition of one cell.
#[derive(serde::Serialize)]
struct Row<'a> {
    cell: &'a str,
    tuner: &'a str,
    tuner_params: &'a str,
    label: &'a str,
    workload: &'a str,
    workload_params: &'a str,
    variant: &'a str,
    dim: u64,
    target_epsilon: Option<f64>,
    noise: Option<f64>,
    seed: u64,
    epsilon: Option<f64>,
    delta: Option<f64>,
    theorem: &'a str,
    #[serde(flatten)]
    outcome: Outcome,
}

/// What one repetition found, as its journal keeps it.
#[derive(serde::Serialize, serde::Deserialize)]
struct Outcome {
    chosen: String,
    utility: Option<f64>,
    best_utility: Option<f64>,
    regret: Option<f64>,
    released_score: Option<f64>,
    runs: u64,
    passes_data_dependent: Option<f64>,
    fallback: bool,
    wall_ms: Option<f64>,
}

/// Per (variant, budget, tuner): mean and the half-width of the 95% Student-t interval over repetitions.
struct Summary {
    variant: String,
    budget: Option<f64>,
    label: String,
    n: usize,
    utility: (f64, Option<f64>),
    epsilon: Option<f64>,
    noise: Option<f64>,
    runs: f64,
    /// What the tuner chose ([`choices`]), when the table has a `chosen` column.
    choices: Option<String>,
}

/// The median [quartiles] of each chosen coordinate and the share of runs that released
/// nothing (⊥), e.g. `eta 2.10e-2 [1.20e-2, 3.50e-2], L 1.90e0 [1.10e0, 2.70e0]; nothing 10%`.
fn choices(chosen: &[&str]) -> String {
    let points: Vec<Vec<(&str, f64)>> = chosen.iter().filter_map(|c| chosen_values(c)).collect();
    let nothing = chosen.len() - points.len();
    let mut parts = Vec::new();
    if let Some(first) = points.first() {
        for (k, (name, _)) in first.iter().enumerate() {
            let mut v: Vec<f64> = points
                .iter()
                .filter_map(|p| p.get(k).filter(|(n, _)| n == name).map(|&(_, x)| x))
                .collect();
            let [q1, q2, q3] = [0.25, 0.5, 0.75].map(|q| quantile(&mut v, q));
            parts.push(format!("{name} {q2:.2e} [{q1:.2e}, {q3:.2e}]"));
        }
    }
    let mut text = parts.join(", ");
    if nothing > 0 || text.is_empty() {
        if !text.is_empty() {
            text.push_str("; ");
        }
        text.push_str(&format!(
            "nothing {:.0}%",
            100.0 * nothing as f64 / chosen.len().max(1) as f64
        ));
    }
    text
}

/// Regret against the best utility known on each objective (a variant's repetition: every
/// tuner and budget meets the same one, see [`WorkloadSpec::regret_unavailable`]): the
/// workload's best, or, where that is a sample's best that some tuner beat, the best any tuner
/// reached there. Where the workload's best is exact this is the `regret` column bit for bit.
fn regret_to_best_known(t: &Table) -> Result<Vec<Option<f64>>> {
    let (variant, seed, utility) = (t.str("variant")?, t.u64("seed")?, t.f64("utility")?);
    let objective: Vec<(&str, u64)> = (0..t.height())
        .map(|i| (variant[i].as_str(), seed[i]))
        .collect();
    let best = best_known(&objective, t.f64("best_utility")?, utility, true);
    Ok(best
        .iter()
        .zip(utility)
        .map(|(b, u)| b.zip(*u).and_then(|(b, u)| finite(b - u)))
        .collect())
}

/// `outcomes.parquet`, derived from the merged table at every report: one row per
/// repetition, with the regret against the best utility known on its objective
/// ([`regret_to_best_known`]), which the merged table's `regret` column is not where the
/// workload's best is a sample's. The regret and utility tables are declared over it.
fn outcomes(t: &Table) -> Result<Table> {
    Ok(Table::default()
        .with("variant", Values::Str(t.str("variant")?.to_vec()))
        .with("label", Values::Str(t.str("label")?.to_vec()))
        .with(
            "target_epsilon",
            Values::F64(t.f64("target_epsilon")?.to_vec()),
        )
        .with("seed", Values::U64(t.u64("seed")?.to_vec()))
        .with("regret", Values::F64(regret_to_best_known(t)?))
        .with("utility", Values::F64(t.f64("utility")?.to_vec())))
}

/// `steps.parquet`, derived at every report: for each variant, tuner, budget after the
/// smallest and repetition, the change in the repetition's regret (utility where the workload
/// reports no regret) from the smallest budget, `step` naming the two (`ε=4 − ε=1`). A
/// tuner's repetition draws the same random numbers at every budget (the stream key has no
/// budget, see [`cells`]), so the difference isolates what the budget changed. No rows where
/// the file has fewer than two budgets.
fn steps(tu: &Tuning, t: &Table) -> Result<Table> {
    let values = match tu.workload.regret_unavailable() {
        None => regret_to_best_known(t)?,
        Some(_) => t.f64("utility")?.to_vec(),
    };
    let budgets: Vec<f64> = tu.budgets.iter().filter_map(|b| *b).collect();
    let (variants, label, budget) = (t.str("variant")?, t.str("label")?, t.f64("target_epsilon")?);
    let seed = t.u64("seed")?;
    let (mut v, mut l, mut step, mut s, mut change) = (vec![], vec![], vec![], vec![], vec![]);
    if let Some((&first, rest)) = budgets.split_first() {
        let at = |i: usize, b: f64| budget[i] == Some(b);
        for variant in tu.workload.variants() {
            let here: Vec<usize> = (0..t.height())
                .filter(|&i| variants[i] == variant.label)
                .collect();
            let mut seeds: Vec<u64> = here.iter().map(|&i| seed[i]).collect();
            seeds.sort_unstable();
            seeds.dedup();
            let value = |lab: &str, b: f64, r: u64| {
                here.iter()
                    .find(|&&i| label[i] == lab && at(i, b) && seed[i] == r)
                    .and_then(|&i| values[i])
            };
            for entry in &tu.tuners {
                for &b in rest {
                    for &r in &seeds {
                        v.push(variant.label.clone());
                        l.push(entry.label.clone());
                        step.push(format!("ε={} − ε={}", fmt_num(b), fmt_num(first)));
                        s.push(r);
                        change.push(
                            value(&entry.label, b, r)
                                .zip(value(&entry.label, first, r))
                                .map(|(x, y)| x - y),
                        );
                    }
                }
            }
        }
    }
    Ok(Table::default()
        .with("variant", Values::Str(v))
        .with("label", Values::Str(l))
        .with("step", Values::Str(step))
        .with("from", Values::F64(vec![budgets.first().copied(); s.len()]))
        .with("seed", Values::U64(s))
        .with("change", Values::F64(change)))
}

fn summarise(t: &Table) -> Result<Vec<Summary>> {
    let (variant, label, budget) = (t.str("variant")?, t.str("label")?, t.f64("target_epsilon")?);
    let (utility, eps, noise, runs) = (
        t.f64("utility")?,
        t.f64("epsilon")?,
        t.f64("noise")?,
        t.u64("runs")?,
    );
    // Results written before the `chosen` column existed have no choices to show.
    let chosen = t.str("chosen").ok();
    let mut groups: Vec<(usize, Vec<usize>)> = Vec::new();
    for i in 0..t.height() {
        let same =
            |j: usize| variant[j] == variant[i] && label[j] == label[i] && budget[j] == budget[i];
        match groups.iter_mut().find(|(first, _)| same(*first)) {
            Some((_, rows)) => rows.push(i),
            None => groups.push((i, vec![i])),
        }
    }
    Ok(groups
        .into_iter()
        .map(|(first, rows)| {
            let col = |c: &[Option<f64>]| rows.iter().filter_map(|&i| c[i]).collect::<Vec<_>>();
            Summary {
                variant: variant[first].clone(),
                budget: budget[first],
                label: label[first].clone(),
                n: rows.len(),
                utility: mean_interval(&col(utility)),
                epsilon: eps[first],
                noise: noise[first],
                runs: rows.iter().map(|&i| runs[i] as f64).sum::<f64>() / rows.len() as f64,
                choices: chosen
                    .map(|c| choices(&rows.iter().map(|&i| c[i].as_str()).collect::<Vec<_>>())),
            }
        })
        .collect())
}

/// `cells.parquet`, derived at every report: one row per cell (variant, tuner, budget) in the
/// merged order, what the privacy, choices and front-gap tables show: the repetitions, the
/// guarantee ε and the runs' noise σ (the cell's first row: the same in each), the mean number
/// of runs, the mean utility with the half-width of its 95% Student-t interval, what the tuner
/// chose ([`choices`], where the runs record it) and, with a `front`, the best accuracy on the
/// front within the budget minus the mean utility (`front_gap`).
fn cell_summaries(tu: &Tuning, t: &Table) -> Result<Table> {
    let sums = summarise(t)?;
    let strs =
        |f: fn(&Summary) -> &String| Values::Str(sums.iter().map(|s| f(s).clone()).collect());
    let nums = |f: &dyn Fn(&Summary) -> Option<f64>| Values::F64(sums.iter().map(f).collect());
    let mut out = Table::default()
        .with("variant", strs(|s| &s.variant))
        .with("label", strs(|s| &s.label))
        .with("target_epsilon", nums(&|s| s.budget))
        .with(
            "repetitions",
            Values::U64(sums.iter().map(|s| s.n as u64).collect()),
        )
        .with("epsilon", nums(&|s| s.epsilon))
        .with("noise", nums(&|s| s.noise))
        .with("runs", nums(&|s| finite(s.runs)))
        .with("utility", nums(&|s| finite(s.utility.0)))
        .with("utility_ci", nums(&|s| s.utility.1));
    if sums.iter().any(|s| s.choices.is_some()) {
        let text = |s: &Summary| s.choices.clone().unwrap_or_else(|| "–".into());
        out = out.with("choices", Values::Str(sums.iter().map(text).collect()));
    }
    if let Some(front) = &tu.front {
        let gap = |s: &Summary| {
            let best = s.budget.and_then(|e| front.best_error(&s.variant, e))?;
            finite(1.0 - best - s.utility.0)
        };
        out = out.with("front_gap", nums(&gap));
    }
    Ok(out)
}

/// `front.parquet`, derived with a `front`: per variant, reference and budget, the best
/// accuracy (1 − error) of the front's points of ε ≤ the budget (none: no point that private).
/// The reference is the front re-evaluated on fresh runs where the study re-evaluated it, then
/// the front as searched (`optimistic`); else the front as searched alone.
fn front_points(tu: &Tuning, front: &ReferenceFront) -> Table {
    let mut refs: Vec<(&str, bool)> = Vec::new();
    if front.reevaluated {
        refs.push((
            "reference front re-evaluated on fresh runs (hyperparameters free)",
            false,
        ));
        refs.push(("reference front as searched (optimistic)", true));
    } else {
        refs.push(("reference front (one run, hyperparameters free)", false));
    }
    let (mut v, mut r, mut o, mut b, mut a) = (vec![], vec![], vec![], vec![], vec![]);
    for variant in tu.workload.variants() {
        for &(name, optimistic) in &refs {
            for e in tu.budgets.iter().flatten() {
                let best = match optimistic {
                    false => front.best_error(&variant.label, *e),
                    true => front.searched_best_error(&variant.label, *e),
                };
                v.push(variant.label.clone());
                r.push(name.to_string());
                o.push(optimistic);
                b.push(Some(*e));
                a.push(best.map(|err| 1.0 - err));
            }
        }
    }
    Table::default()
        .with("variant", Values::Str(v))
        .with("reference", Values::Str(r))
        .with("optimistic", Values::Bool(o))
        .with("target_epsilon", Values::F64(b))
        .with("accuracy", Values::F64(a))
}

impl Study for Tuning {
    fn unit_count(&self) -> u64 {
        (self.workload.variants().len() as u64)
            .saturating_mul(self.budgets.len() as u64)
            .saturating_mul(self.tuners.len() as u64)
    }
    fn units(&self) -> Vec<String> {
        cells(self).into_iter().map(|c| c.key).collect()
    }

    fn run_unit(&self, experiment: &str, i: usize) -> Result<Table> {
        self.run_unit_journaled(experiment, i, &mut Journal::none())
    }

    /// A cell is every repetition of a tuner at a budget (on DP-SGD, hundreds of trainings):
    /// it journals each repetition's row and resumes from them.
    fn run_unit_journaled(
        &self,
        experiment: &str,
        i: usize,
        journal: &mut Journal,
    ) -> Result<Table> {
        let cells = cells(self);
        run_cell(experiment, self, &cells[i], journal)
    }

    fn output(&self) -> &'static str {
        "runs.parquet"
    }

    fn derive(&self, _experiment: &str, merged: &Table) -> Result<Vec<(&'static str, Table)>> {
        let mut out = vec![
            ("outcomes.parquet", outcomes(merged)?),
            ("steps.parquet", steps(self, merged)?),
            ("cells.parquet", cell_summaries(self, merged)?),
        ];
        if let Some(front) = &self.front {
            out.push(("front.parquet", front_points(self, front)));
        }
        Ok(out)
    }

    fn derived(&self) -> Vec<&'static str> {
        let mut out = vec!["outcomes.parquet", "steps.parquet", "cells.parquet"];
        if self.front.is_some() {
            out.push("front.parquet");
        }
        out
    }

    /// Every tuner's guarantee on the first variant's first instance: a tuner whose capability
    /// the workload lacks (dp-gibo on synthetic-gp) fails here, before any cell runs.
    fn check(&self) -> std::result::Result<(), (String, Error)> {
        // A row per repetition of every cell, held in memory until the cell is written.
        let rows = self.unit_count().saturating_mul(self.seeds);
        if rows > MAX_ROWS {
            return Err((
                "seeds".into(),
                Error::invalid(
                    "seeds",
                    self.seeds,
                    format!(
                        "at most {MAX_ROWS} rows in all: {} cells (tuners × variants × budgets) \
                         × {} repetitions is {rows}",
                        self.unit_count(),
                        self.seeds
                    ),
                ),
            ));
        }
        let noise = self.workload.default_noise().unwrap_or(1.0);
        let w = self
            .workload
            .instance(0, self.seed, 0, noise)
            .map_err(|e| ("workload".to_string(), e))?;
        let declared = Declarations::of(w.as_ref());
        for (i, entry) in self.tuners.iter().enumerate() {
            // The tuner as the first budget configures it (see `setup`), without calibrating.
            let written = entry.tuner.as_ref();
            let plan = match self.budgets[0] {
                Some(target) => written
                    .budget_plan(target, self.delta)
                    .map_err(|e| (format!("tuners[{i}]"), e))?,
                None => BudgetPlan::CalibrateRuns,
            };
            plan.tuner()
                .unwrap_or(written)
                .guarantee(&declared, self.delta, &self.accountant)
                .map_err(|e| match e {
                    // Blame the tuner's own field (`tuners[8].fallback`) when it has one.
                    Error::InvalidParameter { name, .. } if name != "noise" => {
                        (format!("tuners[{i}].{name}"), e)
                    }
                    e => (format!("tuners[{i}]"), e),
                })?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `chosen` texts read back exactly; the choices summary is the nearest-rank median and
    /// quartiles of the runs that released a point, and the share that released nothing.
    #[test]
    fn chosen_texts_read_back_exactly_and_summarise() {
        let eta = 0.009_688_193_698_009_69;
        let text = chosen_text(&[("eta".to_string(), eta), ("L".to_string(), 2.5)]);
        assert_eq!(text, "eta=0.00968819369800969 L=2.5");
        assert_eq!(chosen_values(&text), Some(vec![("eta", eta), ("L", 2.5)]));
        assert_eq!(chosen_values(NOTHING), None);
        let texts = ["x1=1", "x1=4", "x1=2", "x1=3", NOTHING];
        assert_eq!(choices(&texts), "x1 2.00e0 [1.00e0, 3.00e0]; nothing 20%");
        assert_eq!(choices(&[NOTHING]), "nothing 100%");
        assert_eq!(choices(&["x1=1"]), "x1 1.00e0 [1.00e0, 1.00e0]");
    }
}
