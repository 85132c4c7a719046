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
use crate::error::{Error, Range, Result};
use crate::numeric::fmt_num;
use crate::params::{Count, OneOrMany};
use crate::rng::stream;
use crate::sim::fields::{fnv1a, Fields};
use crate::sim::plot::{self, Series};
use crate::sim::report::{figure, quantile, select, up, write_grid, Key};
use crate::sim::study::{Header, Study};
use crate::sim::table::{Grid, Table};
use crate::tuners::lipschitz_gain::LipschitzGain;
use crate::workloads::regularised_erm::{
    signed_labels, unit_ball_features, ErmLoss, RegularisedErm,
};
use crate::workloads::{Hyper, RegularisedGain};
use std::path::{Path, PathBuf};

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
                i => self.min * (self.max / self.min).powf(i as f64 / n as f64),
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
        seeds: f.count(
            "seeds",
            p.seeds
                .ok_or_else(|| f.missing("seeds", "the number of random splits"))?,
            1,
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

/// F5 plots and tables from the suite's table.
fn report(exp: &Header, s: &LipschitzSuite, t: &Table, dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    let col = |name: &str| t.f64(name);
    let (err, scale, dfs) = (col("abs_error")?, col("laplace_scale")?, col("delta_f")?);
    let (sens, pointwise, fixed) = (
        col("sens_f_bo")?,
        col("sens_pointwise")?,
        col("fixed_lambda_term")?,
    );
    let m = t.u64("m")?;
    let values = |rows: &[usize], c: &[Option<f64>]| -> Vec<f64> {
        rows.iter().filter_map(|&i| c[i]).collect()
    };
    let max = |xs: &[f64]| xs.iter().copied().fold(0.0, f64::max);
    // Left: |f̃_L − f_BO| against ε, median and 95% per grid, with the Theorem 8 band.
    let loss0 = s.losses[0].name();
    let mut series = Vec::new();
    let mut rows = Vec::new();
    for g in &s.grids {
        let (mut med, mut q95, mut band2, mut band20) = (vec![], vec![], vec![], vec![]);
        for &eps in &s.epsilons {
            let r = select(
                t,
                &[
                    ("loss", Key::Str(loss0.into())),
                    ("grid", Key::Str(g.name())),
                    ("epsilon", Key::Num(eps)),
                ],
            )?;
            let mut e = values(&r, err);
            if e.is_empty() {
                continue;
            }
            let b = max(&values(&r, scale));
            let (q50, q95v) = (quantile(&mut e, 0.5), quantile(&mut e, 0.95));
            med.push((eps, q50));
            q95.push((eps, q95v));
            band2.push((eps, std::f64::consts::LN_2 * b));
            band20.push((eps, 20f64.ln() * b));
            rows.push(vec![
                g.name(),
                fmt_num(eps),
                e.len().to_string(),
                format!("{q50:.4}"),
                up(Some(std::f64::consts::LN_2 * b), 4),
                format!("{q95v:.4}"),
                up(Some(20f64.ln() * b), 4),
            ]);
        }
        for (label, points) in [
            (format!("median |f̃ − f_BO|, {}", g.name()), med),
            (format!("95% |f̃ − f_BO|, {}", g.name()), q95),
            (format!("Theorem 8, a = ln 2, {}", g.name()), band2),
            (format!("Theorem 8, a = ln 20, {}", g.name()), band20),
        ] {
            series.push(Series::line(label, points));
        }
    }
    let fig = figure(
        format!("F5: Algorithm 3 release error against ε ({loss0} loss)"),
        "ε",
        "|f̃_L − f_BO|",
        series,
        None,
        true,
    );
    files.extend(plot::draw(&fig, &dir.join("f5-release-error"))?);
    write_grid(
        &Grid {
            caption: format!(
                "{}: |f̃_L − f_BO| over the splits ({loss0} loss); with probability ≥ 1 − e^(−a) it is at most (a/ε)·Δ_f (Theorem 8; bounds rounded up)",
                exp.title
            ),
            header: ["grid", "ε", "releases", "median", "bound a = ln 2", "95%", "bound a = ln 20"]
                .map(String::from)
                .to_vec(),
            rows,
        },
        &dir.join("f5-release-error"),
        &mut files,
    )?;
    // Right: the worst neighbour's |f_BO − f′_BO| against Δ_f, per (loss, grid).
    let eps0 = s.epsilons[0];
    let mut rows = Vec::new();
    let mut points = Vec::new();
    for loss in &s.losses {
        for g in &s.grids {
            let r = select(
                t,
                &[
                    ("loss", Key::Str(loss.name().into())),
                    ("grid", Key::Str(g.name())),
                    ("epsilon", Key::Num(eps0)),
                    ("release", Key::Int(0)),
                ],
            )?;
            if r.is_empty() {
                continue;
            }
            let (se, pw, d) = (
                max(&values(&r, sens)),
                max(&values(&r, pointwise)),
                max(&values(&r, dfs)),
            );
            let fx = max(&values(&r, fixed));
            points.extend(r.iter().filter_map(|&i| Some((dfs[i]?, sens[i]?))));
            let m_min = r.iter().map(|&i| m[i]).min().unwrap_or(0);
            rows.push(vec![
                loss.name().to_string(),
                g.name(),
                r.len().to_string(),
                m_min.to_string(),
                up(Some(d), 4),
                up(Some((g.max - g.min) / (g.max * g.min)), 4),
                up(Some(fx), 5),
                format!("{se:.5}"),
                format!("{:.2e}", se / d),
                format!("{pw:.5}"),
                format!("{:.3}", pw / fx),
            ]);
        }
    }
    let fig = figure(
        "F5: worst-neighbour |f_BO − f′_BO| against Δ_f (violation: above the diagonal)".into(),
        "Δ_f",
        "max |f_BO − f′_BO| over substitutions",
        vec![
            Series::scatter("splits × losses × grids", points.clone()),
            Series::line("y = Δ_f", {
                let mut d: Vec<(f64, f64)> = points.iter().map(|p| (p.0, p.0)).collect();
                d.sort_by(|a, b| a.0.total_cmp(&b.0));
                d
            }),
        ],
        None,
        true,
    );
    files.extend(plot::draw(&fig, &dir.join("f5-sensitivity"))?);
    write_grid(
        &Grid {
            caption: format!(
                "{}: the worst substitution of one validation record (label flips and pool records) against Theorem 7; Δ_f = fixed-λ term + λ-range term (+ 2× solver error), rounded up",
                exp.title
            ),
            header: [
                "loss",
                "grid",
                "splits",
                "m",
                "Δ_f",
                "λ-range term L(λmax−λmin)/(λmax·λmin)",
                "fixed-λ term min(g*, L/λmin)/m",
                "max |f_BO − f′_BO|",
                "/ Δ_f",
                "max_λ |f_V − f_V′|",
                "/ fixed-λ term",
            ]
            .map(String::from)
            .to_vec(),
            rows,
        },
        &dir.join("f5-sensitivity"),
        &mut files,
    )?;
    Ok(files)
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

    fn report(&self, header: &Header, dir: &Path) -> Result<Vec<PathBuf>> {
        let t = Table::read_parquet(&dir.join(self.output()))?;
        report(header, self, &t, dir)
    }
}
