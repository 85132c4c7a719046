//! Tuning the kernel hyperparameters of GP regression (lengthscales and noise variance) by a
//! validation score, on diabetes or on synthetic data.
//!
//! Privacy model (see [`super::validation_score`]): the training split is public, the
//! validation split (m records) is private, and neighbours replace one validation record. A
//! run at h = (ln ℓ, ln σ²) (or (ln ℓ_1, …, ln ℓ_d, ln σ²) with per-dimension lengthscales)
//! conditions the GP with kernel s²·k_ℓ and noise variance σ² on the public split (exact
//! Cholesky posterior, deterministic), scores each validation record (x, y) by its predictive
//! mean μ and variance v_f, clips the scores to [lo, hi] and releases their mean plus
//! N(0, (z·(hi − lo)/m)²): ρ-zCDP with ρ = 1/(2z²), z the noise multiplier. The scores:
//! * `mse`: −(y − μ)², clipped to [−c, 0] (c = `clip`, default 4);
//! * `loglik`: the predictive log density ln N(y; μ, v_f + σ²), clipped to `loglik_range`
//!   (default [−10, 2]).
//!
//! Units: features are standardised with the training part's mean and sd, and so is the
//! target, so scores are in standardised target units (an MSE of 1 is the variance of the
//! training targets). The oracle's utility is the same mean score on the test part,
//! **unclipped** (−MSE or the mean log predictive density), and the best utility its largest
//! value over the grid.
//!
//! Data: experiment seed s gives the split `Dataset::split(validation, test, s)`, the same for
//! every repetition (repetitions differ in the tuner's draws and the release noise). The
//! `synthetic` data set of seed s has n inputs drawn uniformly from [0, 1]^d and targets
//! y = f(x) + N(0, noise_sd²), where f is a GP sample path (kernel and lengthscale of the
//! `[workload.synthetic]` table, unit signal variance) drawn by random Fourier features
//! ([`super::synthetic_gp::GpObjective`]).
//!
//! The grid: each lengthscale and the noise variance take the values of a grid equally spaced
//! in ln between the ends given; points are listed lexicographically over (ℓ_1, …, ℓ_d, σ²),
//! σ² fastest. Every grid point is evaluated once per (data set, seed) and cached in the spec.
//! Points off the grid (for gradient-based tuners) are evaluated on demand.

use super::synthetic_gp::GpObjective;
use super::validation_score::{log_grid, names, ClippedMeanRelease, PerKey, ScoreClip};
use super::{Hyper, Oracle, PrivateTraining, Space, Variant, Workload, WorkloadSpec};
use crate::accounting::Event;
use crate::data::{builtin, Dataset, Standardiser, Target};
use crate::error::{Error, Range, Result};
use crate::gp::{Kernel, KernelFamily, Posterior};
use crate::params::{Count, OneOrMany};
use crate::rng::{normal, stream};
use ndarray::{Array1, Array2, Axis};
use rand::{Rng, RngCore};
use rayon::prelude::*;
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

/// Stream tag of the synthetic data ("gpreg").
const SYNTHETIC_TAG: u64 = 0x0067_7072_6567;

/// The most grid points a variant may have (each is one GP fit).
pub const MAX_GRID_POINTS: usize = 10_000;

/// The per-record validation score.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Score {
    /// −(y − μ)².
    NegSquaredError,
    /// ln N(y; μ, v_f + σ²).
    LogLikelihood,
}

impl Score {
    pub fn name(self) -> &'static str {
        match self {
            Score::NegSquaredError => "mse",
            Score::LogLikelihood => "loglik",
        }
    }

    /// The score of target `y` under predictive mean `mean` and variance `variance` (of y).
    pub fn eval(self, y: f64, mean: f64, variance: f64) -> f64 {
        let r = y - mean;
        match self {
            Score::NegSquaredError => -r * r,
            Score::LogLikelihood => {
                -0.5 * libm::log(std::f64::consts::TAU * variance) - r * r / (2.0 * variance)
            }
        }
    }
}

/// How the synthetic data set is drawn.
#[derive(Clone, Debug, PartialEq)]
pub struct SyntheticData {
    /// Number of examples.
    pub n: usize,
    /// Input dimension d.
    pub dim: usize,
    pub kernel: KernelFamily,
    /// The path's lengthscale (on [0, 1]^d).
    pub lengthscale: f64,
    /// The sd of the Gaussian noise added to f(x).
    pub noise_sd: f64,
    /// Random Fourier features of the path.
    pub features: usize,
}

impl SyntheticData {
    /// The data set of experiment seed `seed`: x uniform in [0, 1]^d (row by row from the
    /// stream (seed, [tag])), then y_i = f(x_i) + noise_sd·N(0, 1) from the same stream.
    pub fn draw(&self, seed: u64) -> Result<Dataset> {
        let f = GpObjective::sample(
            self.dim,
            self.kernel,
            self.lengthscale,
            1.0,
            self.features,
            seed,
            SYNTHETIC_TAG,
        )?;
        let mut rng = stream(seed, &[SYNTHETIC_TAG]);
        let x = Array2::from_shape_simple_fn((self.n, self.dim), || rng.random::<f64>());
        let y = x
            .rows()
            .into_iter()
            .map(|row| {
                f.eval(row.as_slice().expect("standard layout")) + self.noise_sd * normal(&mut rng)
            })
            .collect();
        Ok(Dataset {
            name: "synthetic".into(),
            x,
            target: Target::Values(y),
        })
    }
}

/// A standardised regression split: features and target scaled by the training part's mean
/// and (population) sd.
#[derive(Clone, Debug)]
pub struct RegressionSplit {
    pub train_x: Array2<f64>,
    pub train_y: Array1<f64>,
    pub validation_x: Array2<f64>,
    pub validation_y: Array1<f64>,
    pub test_x: Array2<f64>,
    pub test_y: Array1<f64>,
}

impl RegressionSplit {
    /// Splits `data` by `Dataset::split(validation, test, seed)` and standardises it.
    pub fn new(data: &Dataset, (validation, test): (f64, f64), seed: u64) -> Result<Self> {
        regression(data)?;
        let split = data.split(validation, test, seed)?;
        if split.validation.is_empty() || split.test.is_empty() {
            return Err(Error::invalid(
                "validation, test",
                format!("{validation}, {test}"),
                format!(
                    "fractions that leave validation and test examples (of {})",
                    data.len()
                ),
            ));
        }
        let column = |d: &Dataset| {
            Array1::from(d.values().expect("checked above").to_vec()).insert_axis(Axis(1))
        };
        let sx = Standardiser::fit(&split.train.x);
        let sy = Standardiser::fit(&column(&split.train));
        let y = |d: &Dataset| sy.apply(&column(d)).column(0).to_owned();
        Ok(RegressionSplit {
            train_x: sx.apply(&split.train.x),
            train_y: y(&split.train),
            validation_x: sx.apply(&split.validation.x),
            validation_y: y(&split.validation),
            test_x: sx.apply(&split.test.x),
            test_y: y(&split.test),
        })
    }
}

/// What a GP at one h gives: the clipped validation scores, their mean, and the unclipped
/// mean test score.
#[derive(Clone, Debug, PartialEq)]
pub struct Evaluation {
    /// One clipped score per validation record.
    pub scores: Vec<f64>,
    /// Their mean: what a run releases before noise.
    pub validation: f64,
    /// The mean unclipped score on the test part (the oracle's utility).
    pub test: f64,
}

/// The model and scoring of one variant, shared by the grid and by off-grid evaluations.
#[derive(Clone, Debug)]
struct Model {
    split: RegressionSplit,
    family: KernelFamily,
    signal_variance: f64,
    per_dimension: bool,
    score: Score,
    clip: ScoreClip,
}

impl Model {
    /// The coordinates of h: lengthscales then the noise variance.
    fn dim(&self) -> usize {
        if self.per_dimension {
            self.split.train_x.ncols() + 1
        } else {
            2
        }
    }

    fn evaluate(&self, h: &[f64]) -> Result<Evaluation> {
        let d = self.split.train_x.ncols();
        if h.len() != self.dim() || h.iter().any(|v| !v.is_finite()) {
            return Err(Error::invalid(
                "hyperparameter",
                format!("{h:?}"),
                format!(
                    "{} finite numbers (ln lengthscale{}, ln noise variance)",
                    self.dim(),
                    if self.per_dimension { "s" } else { "" }
                ),
            ));
        }
        let (logs, noise) = h.split_at(h.len() - 1);
        let lengthscales = if self.per_dimension {
            logs.iter().map(|l| libm::exp(*l)).collect()
        } else {
            vec![libm::exp(logs[0]); d]
        };
        let noise_variance = libm::exp(noise[0]);
        let kernel = Kernel::new(self.family, lengthscales, self.signal_variance)?;
        let gp = Posterior::fit(
            kernel,
            noise_variance,
            self.split.train_x.clone(),
            self.split.train_y.clone(),
        )?;
        let scores = |x: &Array2<f64>, y: &Array1<f64>| -> Result<Vec<f64>> {
            let (mean, var) = gp.predict(x.view())?;
            Ok((0..y.len())
                .map(|i| self.score.eval(y[i], mean[i], var[i] + noise_variance))
                .collect())
        };
        let raw = scores(&self.split.validation_x, &self.split.validation_y)?;
        let test = scores(&self.split.test_x, &self.split.test_y)?;
        let scores: Vec<f64> = raw.iter().map(|&s| self.clip.apply(s)).collect();
        let test = test.iter().sum::<f64>() / test.len() as f64;
        if !test.is_finite() {
            return Err(Error::Numerical(format!(
                "the GP at {h:?} gives a non-finite test score"
            )));
        }
        Ok(Evaluation {
            validation: self.clip.mean(&scores),
            scores,
            test,
        })
    }
}

/// Every grid point's evaluation on one split.
#[derive(Debug)]
pub struct GpGrid {
    model: Model,
    space: Space,
    index: HashMap<Vec<u64>, usize>,
    evaluations: Vec<Evaluation>,
    best: f64,
}

impl GpGrid {
    fn evaluate_all(model: Model, points: Vec<Hyper>) -> Result<Self> {
        let evaluations = points
            .par_iter()
            .map(|h| model.evaluate(h))
            .collect::<Result<Vec<_>>>()?;
        Ok(GpGrid {
            best: evaluations
                .iter()
                .map(|e| e.test)
                .fold(f64::NEG_INFINITY, f64::max),
            index: points
                .iter()
                .enumerate()
                .map(|(i, h)| (key(h), i))
                .collect(),
            space: Space::Finite(points),
            evaluations,
            model,
        })
    }
}

fn regression(data: &Dataset) -> Result<()> {
    if data.values().is_none() {
        return Err(Error::invalid(
            "data",
            &data.name,
            "a regression data set (built in: diabetes) or `synthetic`",
        ));
    }
    Ok(())
}

fn key(h: &[f64]) -> Vec<u64> {
    h.iter().map(|v| v.to_bits()).collect()
}

/// One instance: the cached grid of one split and the release at noise multiplier z.
#[derive(Clone, Debug)]
pub struct GpRegression {
    name: String,
    grid: Arc<GpGrid>,
    release: ClippedMeanRelease,
}

impl GpRegression {
    pub fn release(&self) -> &ClippedMeanRelease {
        &self.release
    }

    /// The standardised split.
    pub fn split(&self) -> &RegressionSplit {
        &self.grid.model.split
    }

    /// The evaluation at `h` (cached on the grid, computed off it).
    pub fn evaluate(&self, h: &Hyper) -> Result<Cow<'_, Evaluation>> {
        match self.grid.index.get(&key(h)) {
            Some(&i) => Ok(Cow::Borrowed(&self.grid.evaluations[i])),
            None => self.grid.model.evaluate(h).map(Cow::Owned),
        }
    }

    /// The per-record losses at `h`, one per validation record: minus the clipped scores, so
    /// each lies in [−hi, −lo] (the squared error clipped to [0, c] for `mse`) and their mean is
    /// minus the noise-free validation score a run releases. These are DP-GIBO's per-user
    /// losses.
    pub fn validation_losses(&self, h: &Hyper) -> Result<Vec<f64>> {
        Ok(self.evaluate(h)?.scores.iter().map(|s| -s).collect())
    }
}

impl PrivateTraining for GpRegression {
    fn run_event(&self) -> &Event {
        self.release.event()
    }
    /// When `h` is not a valid hyperparameter or the GP cannot be fitted there (on the public
    /// training part: data-independent for the private validation part), the run releases
    /// the lowest score plus the same noise. Grid points were all fitted when the instance was
    /// built.
    fn train(&self, h: &Hyper, rng: &mut dyn RngCore) -> f64 {
        let mean = self
            .evaluate(h)
            .map_or(self.release.clip().lo(), |e| e.validation);
        self.release.release(mean, rng)
    }
}

impl Oracle for GpRegression {
    /// The mean unclipped test score at `h`.
    fn utility(&self, h: &Hyper) -> f64 {
        self.evaluate(h).map_or(f64::NAN, |e| e.test)
    }
    fn best_utility(&self) -> f64 {
        self.grid.best
    }
}

impl Workload for GpRegression {
    fn name(&self) -> String {
        self.name.clone()
    }
    fn space(&self) -> &Space {
        &self.grid.space
    }
    fn oracle(&self) -> &dyn Oracle {
        self
    }
    fn private_training(&self) -> Option<&dyn PrivateTraining> {
        Some(self)
    }
}

/// A variant's data: a built-in regression set, or the synthetic draw of each seed.
#[derive(Clone, Debug)]
enum Source {
    Builtin(Dataset),
    Synthetic,
}

/// The `gp-regression` experiment-file workload: one variant per data set.
pub struct GpRegressionSpec {
    names: Vec<String>,
    sources: Vec<Source>,
    synthetic: SyntheticData,
    validation: f64,
    test: f64,
    family: KernelFamily,
    signal_variance: f64,
    per_dimension: bool,
    lengthscale_range: [f64; 2],
    noise_variance_range: [f64; 2],
    lengthscale_grid: Vec<f64>,
    noise_variance_grid: Vec<f64>,
    score: Score,
    clip: ScoreClip,
    noise: Option<f64>,
    grids: PerKey<(usize, u64), GpGrid>,
}

/// Builds the spec from a `[workload]` table (kind = "gp-regression").
pub fn spec(params: &toml::Table) -> Result<Box<dyn WorkloadSpec>> {
    Ok(Box::new(GpRegressionSpec::from_params(params)?))
}

impl GpRegressionSpec {
    /// Parameters: `data` (`diabetes`, `synthetic`, or a list; both by default), `validation`
    /// and `test` fractions (0.25 each), `kernel` (`rbf`, `matern32`, `matern52`; rbf),
    /// `signal_variance` (1), `lengthscales` (`isotropic` or `per-dimension`),
    /// `lengthscale_range` ([0.1, 100]) and `lengthscale_points` (10), `noise_variance_range`
    /// ([1e-3, 1]) and `noise_variance_points` (10), `score` (`mse` or `loglik`), `clip` (c of
    /// `mse`, 4), `loglik_range` ([−10, 2]), `noise` (the noise multiplier z when no budget
    /// calibrates it), and a `synthetic` table: `n` (300), `dim` (3), `kernel` (matern52),
    /// `lengthscale` (0.3), `noise_sd` (0.3), `features` (512).
    pub fn from_params(params: &toml::Table) -> Result<Self> {
        let p: Params = super::read("gp-regression", params)?;
        let synthetic = p.synthetic.data()?;
        let names = names("data", p.data, &["diabetes", "synthetic"])?;
        let sources = names
            .iter()
            .map(|name| {
                if name == "synthetic" {
                    return Ok(Source::Synthetic);
                }
                let d = builtin(name)?;
                regression(&d)?;
                Ok(Source::Builtin(d))
            })
            .collect::<Result<Vec<_>>>()?;
        let validation = Range::OpenUnit.check("validation", p.validation.unwrap_or(0.25))?;
        let test = Range::OpenUnit.check("test", p.test.unwrap_or(0.25))?;
        let family = KernelFamily::parse(p.kernel.as_deref().unwrap_or("rbf"))?;
        let signal_variance =
            Range::Positive.check("signal_variance", p.signal_variance.unwrap_or(1.0))?;
        let per_dimension = match p.lengthscales.as_deref().unwrap_or("isotropic") {
            "isotropic" => false,
            "per-dimension" => true,
            other => {
                return Err(Error::invalid(
                    "lengthscales",
                    other,
                    "\"isotropic\" or \"per-dimension\"",
                ))
            }
        };
        let lengthscale_range = p.lengthscale_range.unwrap_or([0.1, 100.0]);
        let noise_variance_range = p.noise_variance_range.unwrap_or([1e-3, 1.0]);
        let lengthscale_grid = log_grid(
            "lengthscale_range",
            lengthscale_range,
            "lengthscale_points",
            p.lengthscale_points.map_or(10, |c| c.0 as usize),
        )?;
        let noise_variance_grid = log_grid(
            "noise_variance_range",
            noise_variance_range,
            "noise_variance_points",
            p.noise_variance_points.map_or(10, |c| c.0 as usize),
        )?;
        let score = match p.score.as_deref().unwrap_or("mse") {
            "mse" => Score::NegSquaredError,
            "loglik" => Score::LogLikelihood,
            other => return Err(Error::invalid("score", other, "\"mse\" or \"loglik\"")),
        };
        let clip = match score {
            Score::NegSquaredError => {
                if p.loglik_range.is_some() {
                    return Err(Error::invalid(
                        "loglik_range",
                        "given",
                        "absent with score = \"mse\" (its range is [-clip, 0])",
                    ));
                }
                let c = Range::Positive.check("clip", p.clip.unwrap_or(4.0))?;
                ScoreClip::new("clip", -c, 0.0)?
            }
            Score::LogLikelihood => {
                if p.clip.is_some() {
                    return Err(Error::invalid(
                        "clip",
                        "given",
                        "absent with score = \"loglik\" (give loglik_range)",
                    ));
                }
                let [lo, hi] = p.loglik_range.unwrap_or([-10.0, 2.0]);
                ScoreClip::new("loglik_range", lo, hi)?
            }
        };
        let noise = p
            .noise
            .map(|z| Range::Positive.check("noise", z))
            .transpose()?;
        let out = GpRegressionSpec {
            names,
            sources,
            synthetic,
            validation,
            test,
            family,
            signal_variance,
            per_dimension,
            lengthscale_range,
            noise_variance_range,
            lengthscale_grid,
            noise_variance_grid,
            score,
            clip,
            noise,
            grids: PerKey::default(),
        };
        for v in 0..out.sources.len() {
            let points = out.grid_size(v);
            if points > MAX_GRID_POINTS {
                return Err(Error::invalid(
                    "lengthscale_points",
                    out.lengthscale_grid.len(),
                    format!(
                        "a grid of at most {MAX_GRID_POINTS} points ({} has {points}: use \
                         fewer points or lengthscales = \"isotropic\")",
                        out.names[v]
                    ),
                ));
            }
        }
        Ok(out)
    }

    fn input_dim(&self, variant: usize) -> usize {
        match &self.sources[variant] {
            Source::Builtin(d) => d.n_features(),
            Source::Synthetic => self.synthetic.dim,
        }
    }

    /// The number of lengthscale coordinates of h.
    fn lengthscale_dims(&self, variant: usize) -> usize {
        if self.per_dimension {
            self.input_dim(variant)
        } else {
            1
        }
    }

    fn grid_size(&self, variant: usize) -> usize {
        let k = self.lengthscale_dims(variant) as u32;
        (self.lengthscale_grid.len() as f64).powi(k as i32) as usize
            * self.noise_variance_grid.len()
    }

    /// The grid of `variant`: (ln ℓ…, ln σ²), lexicographic with σ² fastest.
    fn points(&self, variant: usize) -> Vec<Hyper> {
        let mut points: Vec<Hyper> = vec![Vec::new()];
        for _ in 0..self.lengthscale_dims(variant) {
            points = points
                .into_iter()
                .flat_map(|p| {
                    self.lengthscale_grid.iter().map(move |l| {
                        let mut q = p.clone();
                        q.push(libm::log(*l));
                        q
                    })
                })
                .collect();
        }
        points
            .into_iter()
            .flat_map(|p| {
                self.noise_variance_grid.iter().map(move |v| {
                    let mut q = p.clone();
                    q.push(libm::log(*v));
                    q
                })
            })
            .collect()
    }

    /// The instance of `variant` for experiment seed `seed` at noise multiplier `noise`; the
    /// grid is evaluated on the first call for (variant, seed) and then shared.
    pub fn workload(&self, variant: usize, seed: u64, noise: f64) -> Result<GpRegression> {
        let source = self.sources.get(variant).ok_or_else(|| {
            Error::invalid("variant", variant, format!("below {}", self.sources.len()))
        })?;
        let grid = self.grids.get_or_build((variant, seed), || {
            let data = match source {
                Source::Builtin(d) => Cow::Borrowed(d),
                Source::Synthetic => Cow::Owned(self.synthetic.draw(seed)?),
            };
            let model = Model {
                split: RegressionSplit::new(&data, (self.validation, self.test), seed)?,
                family: self.family,
                signal_variance: self.signal_variance,
                per_dimension: self.per_dimension,
                score: self.score,
                clip: self.clip,
            };
            GpGrid::evaluate_all(model, self.points(variant))
        })?;
        Ok(GpRegression {
            name: format!("gp-regression({})", self.names[variant]),
            release: ClippedMeanRelease::new(
                self.clip,
                grid.model.split.validation_y.len(),
                noise,
            )?,
            grid,
        })
    }
}

/// A `[workload]` table of kind `gp-regression`.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    data: Option<OneOrMany<String>>,
    validation: Option<f64>,
    test: Option<f64>,
    kernel: Option<String>,
    signal_variance: Option<f64>,
    lengthscales: Option<String>,
    lengthscale_range: Option<[f64; 2]>,
    lengthscale_points: Option<Count>,
    noise_variance_range: Option<[f64; 2]>,
    noise_variance_points: Option<Count>,
    score: Option<String>,
    clip: Option<f64>,
    loglik_range: Option<[f64; 2]>,
    noise: Option<f64>,
    #[serde(default)]
    synthetic: SyntheticParams,
}

/// The `synthetic` table of a `gp-regression` workload.
#[derive(serde::Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct SyntheticParams {
    n: Option<Count>,
    dim: Option<Count>,
    kernel: Option<String>,
    lengthscale: Option<f64>,
    noise_sd: Option<f64>,
    features: Option<Count>,
}

impl SyntheticParams {
    fn data(&self) -> Result<SyntheticData> {
        let dim = match self.dim {
            Some(d) => d.within("dim", 1, 100, "the dimension of the synthetic inputs")? as usize,
            None => 3,
        };
        Ok(SyntheticData {
            // An exact GP holds an n × n kernel: 20,000 points are 3.2 GB.
            n: match self.n {
                Some(n) => n.within(
                    "n",
                    4,
                    20_000,
                    "an exact GP's n × n kernel must fit in memory",
                )? as usize,
                None => 300,
            },
            dim,
            kernel: KernelFamily::parse(self.kernel.as_deref().unwrap_or("matern52"))?,
            lengthscale: Range::Positive.check("lengthscale", self.lengthscale.unwrap_or(0.3))?,
            noise_sd: Range::NonNegative.check("noise_sd", self.noise_sd.unwrap_or(0.3))?,
            features: match self.features {
                Some(f) => f.at_least("features", 1)? as usize,
                None => 512,
            },
        })
    }
}

impl WorkloadSpec for GpRegressionSpec {
    fn kind(&self) -> &'static str {
        "gp-regression"
    }
    fn params(&self) -> String {
        let s = &self.synthetic;
        format!(
            "validation={}, test={}, kernel={}, signal_variance={}, lengthscales={}, \
             lengthscale in [{}, {}] x {}, noise_variance in [{}, {}] x {}, score={} clipped to \
             [{}, {}], synthetic: n={}, dim={}, kernel={}, lengthscale={}, noise_sd={}, features={}",
            self.validation,
            self.test,
            self.family.name(),
            self.signal_variance,
            if self.per_dimension {
                "per-dimension"
            } else {
                "isotropic"
            },
            self.lengthscale_range[0],
            self.lengthscale_range[1],
            self.lengthscale_grid.len(),
            self.noise_variance_range[0],
            self.noise_variance_range[1],
            self.noise_variance_grid.len(),
            self.score.name(),
            self.clip.lo(),
            self.clip.hi(),
            s.n,
            s.dim,
            s.kernel.name(),
            s.lengthscale,
            s.noise_sd,
            s.features,
        )
    }
    fn variants(&self) -> Vec<Variant> {
        (0..self.sources.len())
            .map(|v| Variant {
                label: self.names[v].clone(),
                dim: self.lengthscale_dims(v) as u64 + 1,
            })
            .collect()
    }
    fn default_noise(&self) -> Option<f64> {
        self.noise
    }
    fn instance(
        &self,
        variant: usize,
        seed: u64,
        _rep: u64,
        noise: f64,
    ) -> Result<Box<dyn Workload>> {
        Ok(Box::new(self.workload(variant, seed, noise)?))
    }
}
