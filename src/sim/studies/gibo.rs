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
use crate::numeric::fmt_num;
use crate::numeric::stats::mean_interval;
use crate::params::Count;
use crate::rng::stream;
use crate::sim::fields::Fields;
use crate::sim::plot::{self, Figure, Marker, Scale, Series, Style};
use crate::sim::report::{best_known, error_bars, pm, write_grid};
use crate::sim::study::{Header, Study};
use crate::sim::table::{finite, Grid, Table};
use crate::tuners::{TraceRow, Tuner, MU, NOISE_STD};
use crate::workloads::{Workload, WorkloadSpec};
use rand::Rng;
use rayon::prelude::*;
use std::path::{Path, PathBuf};

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

/// Per variant: loss against evaluations (mean over repetitions at each iteration, 95% t-interval),
/// and one table of final losses.
fn report_paths(exp: &Header, p: &GiboPaths, t: &Table, dir: &Path) -> Result<Vec<PathBuf>> {
    let (series, variant, rep) = (t.str("series")?, t.str("variant")?, t.u64("rep")?);
    let (step, evals, loss) = (t.u64("t")?, t.u64("evaluations")?, t.f64("oracle_loss")?);
    let eps = t.f64("epsilon")?;
    // The excess over the best loss known on each objective (a variant's repetition, which
    // every series meets): the workload's best (exact, or a sample's best, which a path can
    // beat) or the lowest loss any series' path reached there.
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
    let nonnegative = loss.iter().flatten().all(|&l| l >= 0.0);
    let mut files = Vec::new();
    let mut rows = Vec::new();
    for v in p.workload.variants() {
        let mut curves = Vec::new();
        for s in &p.series {
            let idx: Vec<usize> = (0..t.height())
                .filter(|&i| series[i] == s.label && variant[i] == v.label)
                .collect();
            let last = idx.iter().map(|&i| step[i]).max().unwrap_or(0);
            let mut points = Vec::new();
            let mut errors = Vec::new();
            for k in 0..=last {
                let at: Vec<usize> = idx.iter().copied().filter(|&i| step[i] == k).collect();
                let ys: Vec<f64> = at.iter().filter_map(|&i| loss[i]).collect();
                if ys.is_empty() {
                    continue;
                }
                let x = at.iter().map(|&i| evals[i] as f64).sum::<f64>() / at.len() as f64;
                let (m, h) = mean_interval(&ys);
                points.push((x.max(1.0), m));
                errors.push((m, h));
            }
            // The final row of each repetition.
            let last_rows: Vec<usize> = (0..p.seeds)
                .filter_map(|r| {
                    idx.iter()
                        .copied()
                        .filter(|&i| rep[i] == r)
                        .max_by_key(|&i| step[i])
                })
                .collect();
            let finals: Vec<f64> = last_rows.iter().filter_map(|&i| loss[i]).collect();
            let gaps: Vec<f64> = last_rows.iter().filter_map(|&i| excess[i]).collect();
            let gap = mean_interval(&gaps);
            let total: Vec<f64> = (0..p.seeds)
                .filter_map(|r| {
                    idx.iter()
                        .copied()
                        .filter(|&i| rep[i] == r)
                        .max_by_key(|&i| step[i])
                        .map(|i| evals[i] as f64)
                })
                .collect();
            let fin = mean_interval(&finals);
            let e = idx.first().and_then(|&i| eps[i]);
            rows.push(vec![
                v.label.clone(),
                s.label.clone(),
                e.map_or("non-private".into(), |e| {
                    format!("{}", crate::numeric::round_up_decimals(e, 3))
                }),
                format!(
                    "{:.0}",
                    total.iter().sum::<f64>() / total.len().max(1) as f64
                ),
                pm(fin, 4),
                pm(gap, 4),
            ]);
            curves.push(Series::line(&s.label, points).with_errors(error_bars(&errors)));
        }
        // A loss that is never negative here (a squared residual, a Huber loss) keeps its
        // intervals at 0 or above, and the title says so.
        let clip = match nonnegative {
            true => "; intervals clipped at 0: every loss recorded is ≥ 0",
            false => "",
        };
        if nonnegative {
            for c in &mut curves {
                for e in c.errors.iter_mut().flatten() {
                    e.0 = e.0.max(0.0);
                }
            }
        }
        let fig = Figure {
            x_scale: Scale::Log,
            ..Figure::new(
                format!(
                    "Noise-free validation loss against evaluations ({}, {} repetitions{clip})",
                    v.label, p.seeds
                ),
                "function evaluations",
                "validation loss (mean, 95% t-interval)",
                curves,
            )
        };
        let tag = v.label.replace(['=', ' ', ','], "").replace('σ', "sigma");
        let stem = dir.join(format!("loss-{tag}"));
        // From three series on, their bands hide each other: a panel per series.
        files.extend(match fig.series.len() {
            0..=2 => plot::draw(&fig, &stem)?,
            n => {
                let title = format!("{} — one panel per series, the others in grey", fig.title);
                let columns = if n <= 4 { 2 } else { 3 };
                plot::draw_panels(&title, &plot::panel_per_series(&fig), columns, &stem)?
            }
        });
        files.extend(draw_paths(
            p,
            t,
            &v.label,
            &dir.join(format!("path-{tag}")),
        )?);
    }
    let grid = Grid {
        caption: format!(
            "{}: final noise-free validation loss and its excess over the best loss known on the \
             repetition's objective (the exact best, or the best of a seeded sample or of any \
             series' path there, whichever is lower), mean ± 95% Student-t interval over {} \
             repetitions; ε of the μ-GDP path at δ = {} (rounded up); losses are non-private \
             diagnostics",
            exp.title,
            p.seeds,
            fmt_num(p.delta)
        ),
        header: [
            "variant",
            "series",
            "ε",
            "evaluations",
            "final loss",
            "excess loss",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    };
    write_grid(&grid, &dir.join("final-loss"), &mut files)?;
    Ok(files)
}

/// The seed's path panels (spec 004 Figs. 2 right, 3, 4): coordinates 1 and 2 of θ_t (unit box)
/// of repetition 0 of every series that records its iterates, joined in the order of t, its
/// start and end marked, and a cross where its noise-free loss was lowest (the optimum is not
/// known for every objective, so the path's best point is what is marked); nothing when θ has
/// fewer than 2 coordinates or no series records it.
fn draw_paths(p: &GiboPaths, t: &Table, variant: &str, stem: &Path) -> Result<Vec<PathBuf>> {
    let (series, variants, rep) = (t.str("series")?, t.str("variant")?, t.u64("rep")?);
    // Results written before θ was recorded have no `theta` column: no panel.
    let (step, loss, Ok(theta)) = (t.u64("t")?, t.f64("oracle_loss")?, t.str("theta")) else {
        return Ok(Vec::new());
    };
    let mut curves = Vec::new();
    let mut best = Vec::new();
    for s in &p.series {
        let mut rows: Vec<(u64, (f64, f64), Option<f64>)> = (0..t.height())
            .filter(|&i| series[i] == s.label && variants[i] == variant && rep[i] == 0)
            .filter_map(|i| {
                let mut it = theta[i].split(' ').map(|v| v.parse::<f64>().ok());
                match (it.next().flatten(), it.next().flatten()) {
                    (Some(a), Some(b)) => Some((step[i], (a, b), loss[i])),
                    _ => None,
                }
            })
            .collect();
        rows.sort_by_key(|r| r.0);
        if rows.is_empty() {
            continue;
        }
        let color = plot::COLORS[curves.len() % plot::COLORS.len()];
        let lowest = (rows.iter())
            .filter_map(|r| r.2.map(|l| (l, r.1)))
            .min_by(|a, b| a.0.total_cmp(&b.0));
        if let Some((l, at)) = lowest {
            best.push(
                Series::scatter(
                    format!(
                        "{}: lowest loss on the path ({})",
                        s.label,
                        plot::sig_label(l, 3)
                    ),
                    vec![at],
                )
                .styled(Style {
                    color: Some(color),
                    marker: Marker::Star,
                    ..Style::default()
                }),
            );
        }
        let points = rows.into_iter().map(|r| r.1).collect();
        curves.push(Series::line(&s.label, points).styled(Style {
            color: Some(color),
            path: true,
            ..Style::default()
        }));
    }
    if curves.is_empty() {
        return Ok(Vec::new());
    }
    curves.extend(best);
    plot::draw(
        &Figure {
            x_range: Some((0.0, 1.0)),
            y_range: Some((0.0, 1.0)),
            ..Figure::new(
                format!("Path of θ_t, coordinates 1 and 2, repetition 0 ({variant})"),
                "θ₁ (unit box)",
                "θ₂ (unit box)",
                curves,
            )
        },
        stem,
    )
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

    fn report(&self, header: &Header, dir: &Path) -> Result<Vec<PathBuf>> {
        let t = Table::read_parquet(&dir.join(self.output()))?;
        report_paths(header, self, &t, dir)
    }
}
