//! Spec 002 F5 (`kind = "lipschitz-gain-suite"`, a **[framework]** design: the paper has no
//! experiment): Algorithm 3 on real data (§4.3). Each repetition splits a binary data set into a
//! public training part, a private validation part and a held-out pool, trains the regularised
//! linear model exactly at every grid λ, runs the BO of the `lipschitz-gain` tuner, and records
//!
//! * the release error |f̃_L − f_BO| at every ε, against the Theorem 8 band (a/ε)·Δ_f;
//! * the empirical sensitivity |f_BO − f′_BO| against Δ_f, where V′ replaces the validation
//!   record whose substitution changes f_BO most, searched over every label flip and every
//!   pool record (§4.3 "Neighbour").

use super::StudyKind;
use crate::accounting::Laplace;
use crate::data::{self, Standardiser};
use crate::error::{fmt_num, Error, Range, Result};
use crate::params::{Count, OneOrMany};
use crate::rng::stream;
use crate::sim::fields::{fnv1a, Fields};
use crate::sim::report::{quantile, select, Key};
use crate::sim::study::Study;
use crate::sim::table::Table;
use crate::tuners::lipschitz_gain::LipschitzGain;
use crate::workloads::regularised_erm::{
    signed_labels, unit_ball_features, ErmLoss, RegularisedErm,
};
use crate::workloads::{Hyper, RegularisedGain};

pub const KIND: StudyKind = StudyKind {
    source: file!(),
    name: "lipschitz-gain-suite",
    about:
        "spec 002 F5: Algorithm 3 on real data, release errors and worst-neighbour sensitivities",
    parse: |f| Ok(Box::new(parse(f)?)),
};

/// A log-spaced λ grid `log:λ_min:λ_max:N`; λ_min and λ_max are the declared range.
#[derive(Clone, Debug, PartialEq)]
pub struct LambdaGrid {
    pub min: f64,
    pub max: f64,
    pub points: usize,
}

impl LambdaGrid {
    fn parse(s: &str) -> Option<Self> {
        let mut it = s.strip_prefix("log:")?.split(':');
        let min: f64 = it.next()?.parse().ok()?;
        let max: f64 = it.next()?.parse().ok()?;
        let points: usize = it.next()?.parse().ok()?;
        let ok = it.next().is_none()
            && min.is_finite()
            && min > 0.0
            && max.is_finite()
            && max > min
            && (2..=200).contains(&points);
        ok.then_some(LambdaGrid { min, max, points })
    }

    pub fn name(&self) -> String {
        format!(
            "log:{}:{}:{}",
            fmt_num(self.min),
            fmt_num(self.max),
            self.points
        )
    }

    /// The grid; the ends are exactly λ_min and λ_max.
    pub fn lambdas(&self) -> Vec<f64> {
        let n = self.points - 1;
        (0..=n)
            .map(|i| match i {
                0 => self.min,
                i if i == n => self.max,
                i => self.min * libm::pow(self.max / self.min, i as f64 / n as f64),
            })
            .collect()
    }
}

/// A `lipschitz-gain-suite` file.
#[derive(Clone, Debug, PartialEq)]
pub struct LipschitzSuite {
    pub seed: u64,
    pub seeds: u64,
    /// A binary built-in data set.
    pub data: String,
    pub losses: Vec<ErmLoss>,
    /// Fractions of the private validation part and of the held-out pool.
    pub validation: f64,
    pub pool: f64,
    pub grids: Vec<LambdaGrid>,
    pub tuner: LipschitzGain,
    pub epsilons: Vec<f64>,
    /// Laplace releases drawn per (split, loss, grid, ε): the error quantiles' sample.
    pub releases: u64,
}

/// A `lipschitz-gain-suite` experiment file's parameters.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    seed: Option<u64>,
    seeds: Option<Count>,
    data: Option<String>,
    losses: Option<OneOrMany<String>>,
    validation: Option<f64>,
    pool: Option<f64>,
    grids: Option<OneOrMany<String>>,
    evaluations: Option<Count>,
    lengthscale: Option<f64>,
    beta: Option<f64>,
    epsilons: Option<OneOrMany<f64>>,
    releases: Option<Count>,
}

/// Parses a `lipschitz-gain-suite` file.
fn parse(f: &Fields) -> Result<LipschitzSuite> {
    let p: Params = f.read("a `lipschitz-gain-suite` experiment", &[])?;
    let grids = p
        .grids
        .ok_or_else(|| f.missing("grids", "a non-empty list of strings"))?
        .into_vec()
        .into_iter()
        .map(|g| {
            LambdaGrid::parse(&g).ok_or_else(|| {
                f.bad(
                    "grids",
                    &format!("`{g}` is not `log:λ_min:λ_max:N` (0 < λ_min < λ_max, 2 ≤ N ≤ 200)"),
                )
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let losses = p
        .losses
        .ok_or_else(|| f.missing("losses", "a non-empty list of strings"))?
        .into_vec()
        .into_iter()
        .map(|l| ErmLoss::parse(&l).map_err(|e| f.wrap(e)))
        .collect::<Result<Vec<_>>>()?;
    let s = LipschitzSuite {
        seed: p.seed.unwrap_or(0),
        seeds: f.seeds(
            p.seeds
                .ok_or_else(|| f.missing("seeds", "the number of random splits"))?,
        )?,
        data: p.data.unwrap_or_else(|| "breast-cancer".to_string()),
        losses,
        validation: f.in_range("validation", p.validation.unwrap_or(0.3), Range::OpenUnit)?,
        pool: f.in_range("pool", p.pool.unwrap_or(0.2), Range::OpenUnit)?,
        grids,
        tuner: LipschitzGain {
            evaluations: f.count(
                "evaluations",
                p.evaluations
                    .ok_or_else(|| f.missing("evaluations", "T >= 1"))?,
                1,
            )?,
            epsilon: 1.0,
            lengthscale: f.in_range(
                "lengthscale",
                p.lengthscale.unwrap_or(0.2),
                Range::Positive,
            )?,
            beta: f.in_range("beta", p.beta.unwrap_or(4.0), Range::NonNegative)?,
        },
        epsilons: f.numbers_in("epsilons", p.epsilons, Range::Positive)?,
        releases: match p.releases {
            Some(r) => f.count("releases", r, 1)?,
            None => 100,
        },
    };
    if s.validation + s.pool >= 0.9 {
        return Err(f.bad(
            "pool",
            "validation + pool must leave at least 10% for training",
        ));
    }
    Ok(s)
}

/// One (split, loss, grid): the workload, f_BO, and the worst neighbour.
struct Case {
    seed: u64,
    loss: ErmLoss,
    grid: LambdaGrid,
    m: usize,
    f_bo: f64,
    delta_f: f64,
    sens_bo: f64,
    sens_pointwise: f64,
    neighbour: String,
}

/// f_BO of the tuner's BO on `gain` (deterministic: UCB ties go to the lowest index).
fn f_bo(tuner: &LipschitzGain, gain: &dyn RegularisedGain, grid: &[Hyper]) -> Result<f64> {
    // The released value is not used here; any stream serves.
    Ok(tuner.run(gain, grid, &mut stream(0, &[]))?.0)
}

fn case(s: &LipschitzSuite, seed: u64, loss: ErmLoss, grid: &LambdaGrid) -> Result<Case> {
    let data = data::builtin(&s.data)?;
    if data.n_classes() != 2 {
        return Err(Error::invalid(
            "data",
            &s.data,
            "a binary classification set (e.g. breast-cancer)",
        ));
    }
    let split = data.split(s.validation, s.pool, seed)?;
    let standard = Standardiser::fit(&split.train.x);
    let features = |d: &data::Dataset| unit_ball_features(&d.x, &standard);
    let labels = |d: &data::Dataset| signed_labels(d.labels().unwrap_or_default());
    let (train_x, train_y) = (features(&split.train), labels(&split.train)?);
    let (pool_x, pool_y) = (features(&split.test), labels(&split.test)?);
    let w = RegularisedErm::new(
        &format!("{} ({})", s.data, loss.name()),
        train_x.view(),
        &train_y,
        features(&split.validation),
        labels(&split.validation)?,
        &grid.lambdas(),
        (grid.min, grid.max),
        loss,
    )?;
    let points: Vec<Hyper> = grid.lambdas().into_iter().map(|l| vec![l]).collect();
    let base = f_bo(&s.tuner, &w, &points)?;
    let (val_x, val_y) = w.validation();
    let (val_x, val_y) = (val_x.to_owned(), val_y.to_vec());
    // Every substitution of one record: a label flip, or any pool record.
    let mut worst = (0.0f64, 0.0f64, String::from("none"));
    for (i, &yi) in val_y.iter().enumerate() {
        let flip = std::iter::once((val_x.row(i), -yi, format!("flip {i}")));
        let pool = (0..pool_y.len()).map(|j| (pool_x.row(j), pool_y[j], format!("{i} ← pool {j}")));
        for (x, y, label) in flip.chain(pool) {
            let v = w.replaced(i, x, y)?;
            let pointwise = w
                .gains()
                .iter()
                .zip(v.gains())
                .map(|(a, b)| (a - b).abs())
                .fold(0.0, f64::max);
            let diff = (f_bo(&s.tuner, &v, &points)? - base).abs();
            worst.1 = worst.1.max(pointwise);
            if diff > worst.0 {
                worst = (diff, worst.1, label);
            }
        }
    }
    Ok(Case {
        seed,
        loss,
        grid: grid.clone(),
        m: val_y.len(),
        f_bo: base,
        delta_f: s.tuner.sensitivity(w.assumption())?,
        sens_bo: worst.0,
        sens_pointwise: worst.1,
        neighbour: worst.2,
    })
}

/// The suite's jobs in canonical order: (split, loss, grid).
fn jobs(s: &LipschitzSuite) -> Vec<(u64, ErmLoss, &LambdaGrid)> {
    (0..s.seeds)
        .flat_map(|seed| {
            s.losses
                .iter()
                .flat_map(move |&l| s.grids.iter().map(move |g| (seed, l, g)))
        })
        .collect()
}

/// The rows of one job: one per (ε, release).
fn run_job(experiment: &str, s: &LipschitzSuite, job: usize) -> Result<Table> {
    let (seed, loss, grid) = jobs(s)[job];
    let c = case(s, s.seed.wrapping_add(seed), loss, grid)?;
    let mut rows = Vec::new();
    let key = format!("{} | {} | {}", c.loss.name(), c.grid.name(), c.seed);
    for &eps in &s.epsilons {
        let scale = c.delta_f / eps;
        let mechanism = Laplace::new(1.0, scale)?;
        let mut rng = stream(s.seed, &[fnv1a(key.as_bytes()), eps.to_bits()]);
        for r in 0..s.releases {
            let released = c.f_bo + mechanism.noise(&mut rng);
            rows.push(Row::new(&c, r, eps, released, scale));
        }
    }
    Table::from_experiment_rows(experiment, &rows)
}

/// One Laplace release of f_BO at one ε, with the case it came from.
#[derive(serde::Serialize)]
struct Row {
    seed: u64,
    release: u64,
    loss: String,
    grid: String,
    m: u64,
    epsilon: f64,
    lambda_min: f64,
    lambda_max: f64,
    f_bo: f64,
    f_released: f64,
    abs_error: f64,
    delta_f: f64,
    laplace_scale: f64,
    sens_f_bo: f64,
    sens_pointwise: f64,
    fixed_lambda_term: f64,
    neighbour: String,
}

impl Row {
    fn new(c: &Case, release: u64, eps: f64, released: f64, scale: f64) -> Row {
        Row {
            seed: c.seed,
            release,
            loss: c.loss.name().into(),
            grid: c.grid.name(),
            m: c.m as u64,
            epsilon: eps,
            lambda_min: c.grid.min,
            lambda_max: c.grid.max,
            f_bo: c.f_bo,
            f_released: released,
            abs_error: (released - c.f_bo).abs(),
            delta_f: c.delta_f,
            laplace_scale: scale,
            sens_f_bo: c.sens_bo,
            sens_pointwise: c.sens_pointwise,
            // min{g*/m, L/(m λ_min)} with g* = L = 1: the fixed-λ part of Δ_f.
            fixed_lambda_term: (1.0 / c.m as f64).min(1.0 / (c.m as f64 * c.grid.min)),
            neighbour: c.neighbour.clone(),
        }
    }
}

/// One (loss, grid, ε): |f̃_L − f_BO| over the splits' releases against the
/// Theorem 8 bound (a/ε)·Δ_f, which holds with probability ≥ 1 − e^(−a).
#[derive(serde::Serialize)]
struct ReleaseErrorRow {
    loss: String,
    grid: String,
    epsilon: f64,
    releases: u64,
    median_error: f64,
    q95_error: f64,
    bound_ln2: f64,
    bound_ln20: f64,
}

/// One (loss, grid): the worst substitution of one validation record against Theorem 7.
#[derive(serde::Serialize)]
struct SensitivityRow {
    loss: String,
    grid: String,
    splits: u64,
    /// The smallest validation set over the splits.
    m: u64,
    delta_f: f64,
    /// L(λmax − λmin)/(λmax·λmin).
    range_term: f64,
    /// min(g*, L/λmin)/m, the largest over the splits.
    fixed_term: f64,
    max_sens_f_bo: f64,
    sens_over_delta_f: f64,
    max_sens_pointwise: f64,
    pointwise_over_fixed_term: f64,
}

fn release_errors(s: &LipschitzSuite, t: &Table) -> Result<Vec<ReleaseErrorRow>> {
    let (err, scale) = (t.f64("abs_error")?, t.f64("laplace_scale")?);
    let mut out = Vec::new();
    for (loss, g) in s
        .losses
        .iter()
        .flat_map(|l| s.grids.iter().map(move |g| (l, g)))
    {
        for &eps in &s.epsilons {
            let r = select(
                t,
                &[
                    ("loss", Key::Str(loss.name().into())),
                    ("grid", Key::Str(g.name())),
                    ("epsilon", Key::Num(eps)),
                ],
            )?;
            let mut e: Vec<f64> = r.iter().filter_map(|&i| err[i]).collect();
            if e.is_empty() {
                continue;
            }
            let b = r.iter().filter_map(|&i| scale[i]).fold(0.0, f64::max);
            out.push(ReleaseErrorRow {
                loss: loss.name().into(),
                grid: g.name(),
                epsilon: eps,
                releases: e.len() as u64,
                median_error: quantile(&mut e, 0.5),
                q95_error: quantile(&mut e, 0.95),
                bound_ln2: std::f64::consts::LN_2 * b,
                bound_ln20: libm::log(20f64) * b,
            });
        }
    }
    Ok(out)
}

/// The rows of one (loss, grid) at one release (sensitivities do not depend on ε).
fn sensitivity_rows(
    s: &LipschitzSuite,
    t: &Table,
    loss: ErmLoss,
    g: &LambdaGrid,
) -> Result<Vec<usize>> {
    select(
        t,
        &[
            ("loss", Key::Str(loss.name().into())),
            ("grid", Key::Str(g.name())),
            ("epsilon", Key::Num(s.epsilons[0])),
            ("release", Key::Int(0)),
        ],
    )
}

fn sensitivities(s: &LipschitzSuite, t: &Table) -> Result<Vec<SensitivityRow>> {
    let col = |name: &str| t.f64(name);
    let (dfs, sens) = (col("delta_f")?, col("sens_f_bo")?);
    let (pointwise, fixed) = (col("sens_pointwise")?, col("fixed_lambda_term")?);
    let m = t.u64("m")?;
    let mut out = Vec::new();
    for &loss in &s.losses {
        for g in &s.grids {
            let r = sensitivity_rows(s, t, loss, g)?;
            if r.is_empty() {
                continue;
            }
            let max = |c: &[Option<f64>]| r.iter().filter_map(|&i| c[i]).fold(0.0, f64::max);
            let (se, pw, d, fx) = (max(sens), max(pointwise), max(dfs), max(fixed));
            out.push(SensitivityRow {
                loss: loss.name().into(),
                grid: g.name(),
                splits: r.len() as u64,
                m: r.iter().map(|&i| m[i]).min().unwrap_or(0),
                delta_f: d,
                range_term: (g.max - g.min) / (g.max * g.min),
                fixed_term: fx,
                max_sens_f_bo: se,
                sens_over_delta_f: se / d,
                max_sens_pointwise: pw,
                pointwise_over_fixed_term: pw / fx,
            });
        }
    }
    Ok(out)
}

/// One unit per (split, loss, grid): each trains every grid λ and searches every neighbour.
impl Study for LipschitzSuite {
    fn unit_count(&self) -> u64 {
        self.seeds
            .saturating_mul(self.losses.len() as u64)
            .saturating_mul(self.grids.len() as u64)
    }
    fn units(&self) -> Vec<String> {
        jobs(self)
            .into_iter()
            .map(|(seed, loss, grid)| {
                format!(
                    "{} | {} | {}",
                    loss.name(),
                    grid.name(),
                    self.seed.wrapping_add(seed)
                )
            })
            .collect()
    }

    fn run_unit(&self, experiment: &str, i: usize) -> Result<Table> {
        run_job(experiment, self, i)
    }

    fn output(&self) -> &'static str {
        "suite.parquet"
    }

    fn derive(&self, experiment: &str, merged: &Table) -> Result<Vec<(&'static str, Table)>> {
        Ok(vec![
            (
                "release-error.parquet",
                Table::from_experiment_rows(experiment, &release_errors(self, merged)?)?,
            ),
            (
                "sensitivity.parquet",
                Table::from_experiment_rows(experiment, &sensitivities(self, merged)?)?,
            ),
        ])
    }

    fn derived(&self) -> Vec<&'static str> {
        vec!["release-error.parquet", "sensitivity.parquet"]
    }
}
