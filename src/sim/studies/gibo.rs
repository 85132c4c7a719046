//! Spec 004 (DP-GIBO) paths (`kind = "gibo-paths"`): the noise-free validation loss of each
//! iterate against the evaluations spent, for DP-GIBO, DP-GD and the non-private baselines the
//! seed plots (random search, and global GP-UCB Bayesian optimisation `ucb-bo`,
//! [`crate::gp::ucb_bo`]), on any workload with per-user losses. One row per iteration.
//!
//! The oracle loss of an iterate is a non-private diagnostic (spec 004 §5.16): it is computed
//! here, for the plots, and never reaches a tuner. The random-search series is non-private (it
//! tracks the exact best loss so far, as the seed's figures do) and says so in its label.

use super::StudyKind;
use crate::error::{Error, Range, Result};
use crate::gp::ucb_bo::{self, UcbBoOptions};
use crate::numeric::stats::mean_interval;
use crate::params::Count;
use crate::rng::stream;
use crate::sim::fields::Fields;
use crate::sim::report::best_known;
use crate::sim::study::Study;
use crate::sim::table::{finite, Table};
use crate::tuners::{TraceRow, Tuner, MU, NOISE_STD};
use crate::workloads::{Workload, WorkloadSpec};
use rand::Rng;
use rayon::prelude::*;

pub const KIND: StudyKind = StudyKind {
    source: file!(),
    name: "gibo-paths",
    about: "spec 004: loss against evaluations for DP-GIBO, DP-GD and non-private random search",
    parse: |f| Ok(Box::new(parse(f)?)),
};

/// Stream tag of the series' runs.
const PATH_STREAM: u64 = 0x6769_626f;

/// The private tuners a series may run (their per-iteration rows are the path).
const PRIVATE_METHODS: [&str; 2] = ["dp-gibo", "dp-gd"];

/// How one series moves.
pub enum Method {
    /// A private tuner, observed through [`Tuner::tune_observed`].
    Private(Box<dyn Tuner>),
    /// Non-private random search: uniform points, the exact best loss so far.
    RandomSearch(Evaluations),
    /// Non-private global GP-UCB on exact losses: the best loss so far.
    UcbBo(Evaluations, UcbBoOptions),
}

/// How many points random search evaluates.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Evaluations {
    Fixed(u64),
    /// T·(d + 1): the budget of DP-GIBO with T steps of the default batch d + 1.
    PerStep(u64),
}

pub struct PathSeries {
    pub label: String,
    pub method: Method,
}

/// A `gibo-paths` file.
pub struct GiboPaths {
    pub seed: u64,
    pub seeds: u64,
    /// δ of the (ε, δ) column (the guarantee is μ-GDP; ε is its exact conversion).
    pub delta: f64,
    pub workload: Box<dyn WorkloadSpec>,
    pub series: Vec<PathSeries>,
}

/// A `gibo-paths` experiment file's parameters (its `[workload]` and `[[series]]` aside).
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    seed: Option<u64>,
    seeds: Option<Count>,
    delta: Option<f64>,
}

/// A non-private baseline series: `random-search` or `ucb-bo` (its `label`, `method` aside).
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Baseline {
    evaluations: Option<Count>,
    steps: Option<Count>,
    refit_every: Option<Count>,
    candidates: Option<Count>,
}

/// Parses a `gibo-paths` file.
fn parse(f: &Fields) -> Result<GiboPaths> {
    let p: Params = f.read("a `gibo-paths` experiment", &["workload", "series"])?;
    let (workload, _) = f.workload()?;
    let mut series = Vec::new();
    for sf in f.array("series", true)? {
        let label = sf
            .string("label")?
            .ok_or_else(|| sf.missing("label", "the legend text"))?
            .to_string();
        let mut params = sf.table.clone();
        params.remove("label");
        params.remove("method");
        let method = match sf.string("method")? {
            Some(name) if PRIVATE_METHODS.contains(&name) => {
                Method::Private(crate::tuners::build(name, &params).map_err(|e| sf.wrap(e))?)
            }
            Some(name @ ("random-search" | "ucb-bo")) => {
                let b: Baseline = sf.read(&format!("a `{name}` series"), &["label", "method"])?;
                let n = match (b.evaluations, b.steps) {
                    (Some(n), None) => Evaluations::Fixed(sf.count("evaluations", n, 1)?),
                    (None, Some(t)) => Evaluations::PerStep(sf.count("steps", t, 1)?),
                    _ => return Err(sf.bad(
                        "evaluations",
                        "exactly one of `evaluations` (points) or `steps` (T: T·(d + 1) points)",
                    )),
                };
                if name == "random-search" {
                    if b.refit_every.is_some() || b.candidates.is_some() {
                        return Err(sf.bad(
                            "refit_every",
                            "`refit_every` and `candidates` are for `ucb-bo`, not `random-search`",
                        ));
                    }
                    Method::RandomSearch(n)
                } else {
                    let defaults = UcbBoOptions::default();
                    let option = |key, given, default: usize| {
                        sf.count_or(key, given, 1, default as u64)
                            .map(|v| v as usize)
                    };
                    let options = UcbBoOptions {
                        refit_every: option("refit_every", b.refit_every, defaults.refit_every)?,
                        candidates: option("candidates", b.candidates, defaults.candidates)?,
                        ..defaults
                    };
                    Method::UcbBo(n, options)
                }
            }
            _ => {
                return Err(sf.bad(
                    "method",
                    "`dp-gibo`, `dp-gd`, or the non-private `random-search` or `ucb-bo`",
                ))
            }
        };
        if series.iter().any(|s: &PathSeries| s.label == label) {
            return Err(sf.bad("label", "used twice; give each series its own"));
        }
        series.push(PathSeries { label, method });
    }
    Ok(GiboPaths {
        seed: p.seed.unwrap_or(0),
        seeds: f.seeds(
            p.seeds
                .ok_or_else(|| f.missing("seeds", "the number of repetitions"))?,
        )?,
        delta: f.in_range("delta", p.delta.unwrap_or(1e-5), Range::OpenUnit)?,
        workload,
        series,
    })
}

/// One iteration of a path: its part of a row of `iterations.parquet`.
#[derive(Default, Clone, serde::Serialize)]
struct Iteration {
    t: u64,
    evaluations: u64,
    oracle_loss: Option<f64>,
    /// The loss above the best known on the objective ([`run_paths`] fills it in).
    excess_loss: Option<f64>,
    batch_size: Option<f64>,
    posterior_trace: Option<f64>,
    g_norm: Option<f64>,
    noise_norm: Option<f64>,
    frac_clipped: Option<f64>,
    /// Against the exact gradients, when the workload has them.
    bias_norm: Option<f64>,
    clip_bias_norm: Option<f64>,
    grad_true_norm: Option<f64>,
    /// θ_t in the unit box, as space-separated numbers.
    #[serde(serialize_with = "spaced")]
    theta: Vec<f64>,
}

fn spaced<S: serde::Serializer>(v: &[f64], s: S) -> std::result::Result<S::Ok, S::Error> {
    let v: Vec<String> = v.iter().map(|x| format!("{x}")).collect();
    s.serialize_str(&v.join(" "))
}

/// One row of `iterations.parquet`.
#[derive(serde::Serialize)]
struct PathRow<'a> {
    series: &'a str,
    variant: &'a str,
    dim: u64,
    rep: u64,
    mu: Option<f64>,
    epsilon: Option<f64>,
    noise_std: Option<f64>,
    #[serde(flatten)]
    iteration: Iteration,
}

fn oracle_loss(w: &dyn Workload, unit: &[f64]) -> Option<f64> {
    finite(-w.oracle().utility(&unit.to_vec()))
}

/// The row of one observed iteration (`evaluations` counts the points before it).
fn diagnostics(w: &dyn Workload, it: &TraceRow) -> Iteration {
    let count = |name| it.value(name).unwrap_or(0.0) as u64;
    Iteration {
        t: count("t"),
        evaluations: count("evaluations") - count("batch_size"),
        oracle_loss: oracle_loss(w, it.point),
        excess_loss: None,
        batch_size: it.value("batch_size"),
        posterior_trace: it.value("posterior_trace").and_then(finite),
        g_norm: it.value("g_norm").and_then(finite),
        noise_norm: it.value("noise_norm").and_then(finite),
        frac_clipped: it.value("frac_clipped").and_then(finite),
        bias_norm: it.value("bias_norm").and_then(finite),
        clip_bias_norm: it.value("clip_bias_norm").and_then(finite),
        grad_true_norm: it.value("grad_true_norm").and_then(finite),
        theta: it.point.to_vec(),
    }
}

/// The rows of a non-private baseline: one per evaluation, the best loss so far.
fn best_so_far(losses: impl Iterator<Item = f64>) -> Vec<Iteration> {
    let mut best = f64::INFINITY;
    losses
        .enumerate()
        .map(|(i, l)| {
            best = best.min(l);
            Iteration {
                t: i as u64,
                evaluations: i as u64 + 1,
                oracle_loss: finite(best),
                ..Iteration::default()
            }
        })
        .collect()
}

/// One repetition of one series: its rows, the noise std and μ (None: non-private).
fn run_series(
    s: &PathSeries,
    w: &dyn Workload,
    rng: &mut dyn rand::RngCore,
) -> Result<(Vec<Iteration>, Option<f64>, Option<f64>)> {
    let mut rows = Vec::new();
    let dim = w.space().dim();
    let count = |n: Evaluations| match n {
        Evaluations::Fixed(n) => n,
        Evaluations::PerStep(t) => t * (dim as u64 + 1),
    };
    let outcome = match &s.method {
        Method::UcbBo(n, options) => {
            let options = UcbBoOptions {
                evaluations: count(*n) as usize,
                ..options.clone()
            };
            let mut loss = |x: &[f64]| {
                oracle_loss(w, x)
                    .ok_or_else(|| Error::Numerical(format!("no finite oracle loss at {x:?}")))
            };
            let path = ucb_bo::minimise(&mut loss, dim, &options, rng)?;
            return Ok((best_so_far(path.into_iter().map(|p| p.1)), None, None));
        }
        Method::RandomSearch(n) => {
            let losses = (0..count(*n)).map(|_| {
                let h: Vec<f64> = (0..dim).map(|_| rng.random::<f64>()).collect();
                oracle_loss(w, &h).unwrap_or(f64::INFINITY)
            });
            return Ok((best_so_far(losses), None, None));
        }
        Method::Private(t) => {
            let outcome =
                t.tune_observed(w, rng, &mut |it: &TraceRow| rows.push(diagnostics(w, it)))?;
            (outcome, t.name())
        }
    };
    let (outcome, name) = outcome;
    let chosen = outcome.chosen.as_ref().ok_or_else(|| {
        Error::Numerical(format!(
            "tuner `{name}` released no iterate (it always releases θ_T)"
        ))
    })?;
    rows.push(Iteration {
        t: rows.len() as u64,
        evaluations: outcome.runs,
        oracle_loss: oracle_loss(w, chosen),
        ..Iteration::default()
    });
    let diagnostic = |d| outcome.diagnostic(d).and_then(finite);
    Ok((rows, diagnostic(NOISE_STD), diagnostic(MU)))
}

/// Every (variant, series, repetition) in canonical order.
fn jobs(p: &GiboPaths) -> Vec<(usize, usize, u64)> {
    (0..p.workload.variants().len())
        .flat_map(|v| (0..p.series.len()).flat_map(move |s| (0..p.seeds).map(move |r| (v, s, r))))
        .collect()
}

/// The rows of `jobs` (a slice of [`jobs`]): one row per iteration.
pub fn run_paths(experiment: &str, p: &GiboPaths, jobs: &[(usize, usize, u64)]) -> Result<Table> {
    let variants = p.workload.variants();
    let noise = p.workload.default_noise().unwrap_or(1.0);
    let results = jobs
        .par_iter()
        .map(|&(v, s, rep)| {
            let w = p.workload.instance(v, p.seed, rep, noise)?;
            // Variants of one dimension (e.g. evaluation-noise levels) share their streams:
            // the same start and first draws (common random numbers). With one variant per
            // dimension the key is the variant's index, as it always was.
            let key = variants
                .iter()
                .position(|x| x.dim == variants[v].dim)
                .unwrap_or(v);
            let mut rng = stream(p.seed, &[PATH_STREAM, key as u64, s as u64, rep]);
            let best = finite(-w.oracle().best_utility());
            run_series(&p.series[s], w.as_ref(), &mut rng)
                .map(|r| (r, best))
                .map_err(|e| e.context(&p.series[s].label))
        })
        .collect::<Result<Vec<_>>>()?;
    let mut table = Vec::new();
    for (&(v, s, rep), ((rows, noise_std, mu), best)) in jobs.iter().zip(results) {
        let epsilon = match mu {
            Some(m) => finite(crate::accounting::convert::gdp_epsilon(m, p.delta)?.epsilon),
            None => None,
        };
        for mut iteration in rows {
            iteration.excess_loss = iteration.oracle_loss.zip(best).map(|(l, b)| l - b);
            table.push(PathRow {
                series: &p.series[s].label,
                variant: &variants[v].label,
                dim: variants[v].dim,
                rep,
                mu,
                epsilon,
                noise_std,
                iteration,
            });
        }
    }
    Table::from_experiment_rows(experiment, &table)
}

/// One row of `finals.parquet`: a (variant, series) cell's final noise-free loss over its
/// repetitions (the last row of each).
#[derive(serde::Serialize)]
struct Final<'a> {
    variant: &'a str,
    series: &'a str,
    repetitions: u64,
    /// ε of the μ-GDP path (None: non-private).
    epsilon: Option<f64>,
    /// The mean of the repetitions' evaluations.
    evaluations: Option<f64>,
    /// Mean and 95% Student-t half-width.
    final_loss: Option<f64>,
    final_loss_ci: Option<f64>,
    /// The excess over the best loss known on the repetition's objective: the workload's
    /// (exact, or a sample's best, which a path can beat) or the lowest loss any series'
    /// path reached there, whichever is lower.
    excess_loss: Option<f64>,
    excess_loss_ci: Option<f64>,
}

/// The final loss of each (variant, series), in the file's order.
fn finals(p: &GiboPaths, experiment: &str, t: &Table) -> Result<Table> {
    let (series, variant, rep) = (t.str("series")?, t.str("variant")?, t.u64("rep")?);
    let (step, evals, loss) = (t.u64("t")?, t.u64("evaluations")?, t.f64("oracle_loss")?);
    let eps = t.f64("epsilon")?;
    let reference: Vec<Option<f64>> = loss
        .iter()
        .zip(t.f64("excess_loss")?)
        .map(|(l, e)| l.zip(*e).map(|(l, e)| l - e))
        .collect();
    let objective: Vec<(&str, u64)> = (0..t.height())
        .map(|i| (variant[i].as_str(), rep[i]))
        .collect();
    let excess: Vec<Option<f64>> = best_known(&objective, &reference, loss, false)
        .iter()
        .zip(loss)
        .map(|(b, l)| b.zip(*l).map(|(b, l)| l - b))
        .collect();
    let mut rows = Vec::new();
    let variants = p.workload.variants();
    for v in &variants {
        for s in &p.series {
            let idx: Vec<usize> = (0..t.height())
                .filter(|&i| series[i] == s.label && variant[i] == v.label)
                .collect();
            // The final row of each repetition.
            let last: Vec<usize> = (0..p.seeds)
                .filter_map(|r| {
                    (idx.iter().copied())
                        .filter(|&i| rep[i] == r)
                        .max_by_key(|&i| step[i])
                })
                .collect();
            let of =
                |c: &[Option<f64>]| -> Vec<f64> { last.iter().filter_map(|&i| c[i]).collect() };
            let (fin, gap) = (mean_interval(&of(loss)), mean_interval(&of(&excess)));
            let total = last.iter().map(|&i| evals[i] as f64).sum::<f64>();
            rows.push(Final {
                variant: &v.label,
                series: &s.label,
                repetitions: last.len() as u64,
                epsilon: idx.first().and_then(|&i| eps[i]),
                evaluations: finite(total / last.len().max(1) as f64),
                final_loss: finite(fin.0),
                final_loss_ci: fin.1,
                excess_loss: finite(gap.0),
                excess_loss_ci: gap.1,
            });
        }
    }
    Table::from_experiment_rows(experiment, &rows)
}

/// One row of `theta-paths.parquet`: coordinates 1 and 2 of θ_t (unit box) of an iteration
/// that records its iterate, with its noise-free loss.
#[derive(serde::Serialize)]
struct ThetaRow<'a> {
    variant: &'a str,
    series: &'a str,
    rep: u64,
    t: u64,
    theta1: f64,
    theta2: f64,
    oracle_loss: Option<f64>,
}

/// The rows whose θ has at least 2 coordinates (none in results written before θ was).
fn theta_paths(experiment: &str, t: &Table) -> Result<Table> {
    let (series, variant, rep) = (t.str("series")?, t.str("variant")?, t.u64("rep")?);
    let (step, loss) = (t.u64("t")?, t.f64("oracle_loss")?);
    let Ok(theta) = t.str("theta") else {
        return Table::from_experiment_rows::<ThetaRow>(experiment, &[]);
    };
    let rows: Vec<ThetaRow> = (0..t.height())
        .filter_map(|i| {
            let mut it = theta[i].split(' ').map(|v| v.parse::<f64>().ok());
            let (theta1, theta2) = (it.next().flatten()?, it.next().flatten()?);
            Some(ThetaRow {
                variant: &variant[i],
                series: &series[i],
                rep: rep[i],
                t: step[i],
                theta1,
                theta2,
                oracle_loss: loss[i],
            })
        })
        .collect();
    Table::from_experiment_rows(experiment, &rows)
}

/// One unit per (variant, series, repetition): a whole optimisation path.
impl Study for GiboPaths {
    fn unit_count(&self) -> u64 {
        (self.workload.variants().len() as u64)
            .saturating_mul(self.series.len() as u64)
            .saturating_mul(self.seeds)
    }
    fn units(&self) -> Vec<String> {
        let variants = self.workload.variants();
        jobs(self)
            .into_iter()
            .map(|(v, s, r)| format!("{} | {} | rep {r}", variants[v].label, self.series[s].label))
            .collect()
    }

    fn run_unit(&self, experiment: &str, i: usize) -> Result<Table> {
        run_paths(experiment, self, &jobs(self)[i..=i])
    }

    fn output(&self) -> &'static str {
        "iterations.parquet"
    }

    /// The final losses per (variant, series) and the iterates' first two coordinates; the
    /// figures and the table are declared in the experiment files.
    fn derive(&self, experiment: &str, merged: &Table) -> Result<Vec<(&'static str, Table)>> {
        Ok(vec![
            ("finals.parquet", finals(self, experiment, merged)?),
            ("theta-paths.parquet", theta_paths(experiment, merged)?),
        ])
    }

    fn derived(&self) -> Vec<&'static str> {
        vec!["finals.parquet", "theta-paths.parquet"]
    }
}
