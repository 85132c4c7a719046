//! Tuning an ε-SVR's per-feature lengthscales, ε, C and γ by per-user validation losses on CT
//! slices (spec 004 §3.3 and §4.2(d), Example 4.2 of the DP-GIBO paper).
//!
//! # Data
//!
//! The UCI CT-slices CSV given by `path` ([`crate::data::ct_slices`]; never downloaded), or,
//! without a path, the synthetic stand-in of the same schema and 10,000 rows drawn from the
//! experiment seed ([`crate::data::synthetic_ct_slices`]). Per experiment seed s, fixed across
//! repetitions: the stream `rng::stream(s, [0x7376_7263, 0])` ("svrc") shuffles the rows
//! (training = the first `n_train`, validation = the next `n_validation`, each then in file
//! order) and then, for the `paper` profile, the 384 feature columns (the first `features` of
//! the shuffle, in file order); the `code` profile takes the first `features` columns, as the
//! authors' code does. Features and target are standardised with the training rows' mean and
//! population sd, so losses are in standardised target units.
//!
//! # Objective
//!
//! θ = (ln ℓ_1, …, ln ℓ_p, ln ε, ln C, ln γ), d = p + 3, in the box
//!
//! | coordinate | `paper` | `code` |
//! |---|---|---|
//! | ln ℓ_j | [−2, 2] | [−3, 3] |
//! | ln ε | [ln 0.01, ln 1] | same |
//! | ln C | [ln 0.1, ln 3] | same |
//! | ln γ | [ln 0.01, ln 5] | same |
//!
//! The workload's space is the unit box: a point u maps to θ = lo + u·(hi − lo) coordinate-wise
//! ([`PerUserLosses::domain`]). At θ the ε-SVR with kernel exp(−γ‖(x − x′)/ℓ‖²), box C and tube
//! ε is fitted on the training rows by [`crate::learn::svr`] (LIBSVM semantics, tol 1e-3;
//! deterministic), and user i (validation row i, n = `n_validation` users) has the loss
//! L_i(θ) = ½(y_i − f_θ(x_i))². Evaluations are exact ([`PerUserLosses::evaluation_sd`] = 0).
//!
//! # Privacy (random-search tuners)
//!
//! As for the other real-data workloads ([`super::validation_score`]): the training rows are
//! public, the validation rows private, neighbours replace one validation row. A run at u
//! releases the mean of the scores −min(L_i, R) ∈ [−R, 0] (R = `clip`, a public bound in
//! standardised units) plus N(0, (z·R/n)²): ρ-zCDP with ρ = 1/(2z²), z the noise multiplier.
//!
//! # Oracle
//!
//! The utility at u is −(1/n)·Σ_i L_i(θ), the unclipped mean validation loss (the quantity the
//! DP-GIBO paper plots). The best utility is an *estimate*: the largest utility over
//! `best_samples` points drawn uniformly from the box by `rng::stream(s, [0x7376_7263, 1])`, so
//! a tuner can beat it (negative regret).

use super::validation_score::{ClippedMeanRelease, PerKey, ScoreClip};
use super::{
    Hyper, Oracle, PerUserLosses, PrivateTraining, Space, Variant, Workload, WorkloadSpec,
};
use crate::accounting::Event;
use crate::data::ct_slices::{load_ct_slices, synthetic_ct_slices, CT_FEATURES, STAND_IN_ROWS};
use crate::data::{shuffled_indices, Dataset, Standardiser};
use crate::error::{Error, Range, Result};
use crate::learn::smo::MAX_TRAIN_ROWS;
use crate::learn::svr::{fit, ArdRbf, Svr, SvrParams};
use crate::params::Count;
use crate::rng::stream;
use ndarray::{Array1, Array2, Axis};
use rand::{Rng, RngCore};
use rayon::prelude::*;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// Stream tag of the split, the feature subset and the best-utility sample ("svrc").
const TAG: u64 = 0x7376_7263;

/// Which setting of spec 004 §4.2(d).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Profile {
    /// The paper's: a random feature subset per seed (100 features by default), ln ℓ ∈ [−2, 2].
    Paper,
    /// The authors' code: the first `features` columns (19 by default), ln ℓ ∈ [−3, 3].
    Code,
}

impl Profile {
    pub fn parse(name: &str) -> Result<Self> {
        match name {
            "paper" => Ok(Profile::Paper),
            "code" => Ok(Profile::Code),
            other => Err(Error::invalid("profile", other, "\"paper\" or \"code\"")),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Profile::Paper => "paper",
            Profile::Code => "code",
        }
    }

    /// The number of features when none is given.
    pub fn default_features(self) -> usize {
        match self {
            Profile::Paper => 100,
            Profile::Code => 19,
        }
    }

    /// b of the log-lengthscale range [−b, b].
    pub fn log_lengthscale_bound(self) -> f64 {
        match self {
            Profile::Paper => 2.0,
            Profile::Code => 3.0,
        }
    }

    /// The native box: p log-lengthscales, then ln ε, ln C, ln γ.
    pub fn domain(self, features: usize) -> Vec<(f64, f64)> {
        let b = self.log_lengthscale_bound();
        let mut domain = vec![(-b, b); features];
        domain.extend([
            (libm::log(0.01f64), libm::log(1.0f64)),
            (libm::log(0.1f64), libm::log(3.0f64)),
            (libm::log(0.01f64), libm::log(5.0f64)),
        ]);
        domain
    }
}

/// Everything but the data and the seed.
#[derive(Clone, Debug, PartialEq)]
pub struct SvrConfig {
    pub profile: Profile,
    pub n_train: usize,
    pub n_validation: usize,
    /// p, the number of feature columns used.
    pub features: usize,
    /// R: each score is −min(L_i, R).
    pub clip: f64,
    /// Box points behind the best-utility estimate.
    pub best_samples: usize,
}

impl SvrConfig {
    /// The spec's sizes (1000 training and 9000 validation rows, the profile's features),
    /// R = 2 and 32 best-utility samples.
    pub fn new(profile: Profile) -> Self {
        SvrConfig {
            profile,
            n_train: 1000,
            n_validation: 9000,
            features: profile.default_features(),
            clip: 2.0,
            best_samples: 32,
        }
    }

    /// Checks every field against a data set of `rows` rows.
    pub fn validate(&self, rows: usize) -> Result<()> {
        if !(1..=MAX_TRAIN_ROWS).contains(&self.n_train) {
            return Err(Error::invalid(
                "n_train",
                self.n_train,
                format!("an integer in [1, {MAX_TRAIN_ROWS}] (the SVR keeps its Gram matrix)"),
            ));
        }
        if self.n_validation == 0 {
            return Err(Error::invalid("n_validation", 0, "an integer >= 1"));
        }
        if self.n_train + self.n_validation > rows {
            return Err(Error::invalid(
                "n_train + n_validation",
                self.n_train + self.n_validation,
                format!("at most the {rows} rows of the data"),
            ));
        }
        if !(1..=CT_FEATURES).contains(&self.features) {
            return Err(Error::invalid(
                "features",
                self.features,
                format!("an integer in [1, {CT_FEATURES}]"),
            ));
        }
        Range::Positive.check("clip", self.clip)?;
        if self.best_samples == 0 {
            return Err(Error::invalid("best_samples", 0, "an integer >= 1"));
        }
        Ok(())
    }
}

/// The standardised rows of one seed.
#[derive(Clone, Debug)]
pub struct SvrSplit {
    /// Rows of the data set in each part, increasing.
    pub train_rows: Vec<usize>,
    pub validation_rows: Vec<usize>,
    /// The feature columns used, increasing.
    pub features: Vec<usize>,
    pub train_x: Array2<f64>,
    pub train_y: Array1<f64>,
    pub validation_x: Array2<f64>,
    pub validation_y: Array1<f64>,
}

impl SvrSplit {
    /// The split and feature subset of `seed` (module docs), standardised.
    pub fn new(data: &Dataset, config: &SvrConfig, seed: u64) -> Result<Self> {
        config.validate(data.len())?;
        let values = data.values().ok_or_else(|| {
            Error::invalid("data", &data.name, "a regression data set (CT slices)")
        })?;
        if data.n_features() != CT_FEATURES {
            return Err(Error::invalid(
                "data",
                format!("{} features", data.n_features()),
                format!("{CT_FEATURES} features (the CT-slices schema)"),
            ));
        }
        let mut rng = stream(seed, &[TAG, 0]);
        let rows = shuffled_indices(data.len(), &mut rng);
        let sorted = |v: &[usize]| {
            let mut v = v.to_vec();
            v.sort_unstable();
            v
        };
        let (n_train, n_val) = (config.n_train, config.n_validation);
        let train_rows = sorted(&rows[..n_train]);
        let validation_rows = sorted(&rows[n_train..n_train + n_val]);
        let features = match config.profile {
            Profile::Paper => sorted(&shuffled_indices(CT_FEATURES, &mut rng)[..config.features]),
            Profile::Code => (0..config.features).collect(),
        };
        let pick = |rows: &[usize]| data.x.select(Axis(0), rows).select(Axis(1), &features);
        let target = |rows: &[usize]| -> Array2<f64> {
            Array2::from_shape_fn((rows.len(), 1), |(i, _)| values[rows[i]])
        };
        let (train_x, validation_x) = (pick(&train_rows), pick(&validation_rows));
        let sx = Standardiser::fit(&train_x);
        let sy = Standardiser::fit(&target(&train_rows));
        let y = |rows: &[usize]| sy.apply(&target(rows)).column(0).to_owned();
        Ok(SvrSplit {
            train_x: sx.apply(&train_x),
            train_y: y(&train_rows),
            validation_x: sx.apply(&validation_x),
            validation_y: y(&validation_rows),
            train_rows,
            validation_rows,
            features,
        })
    }
}

/// What a run and the oracle need at a point.
#[derive(Clone, Copy, Debug)]
struct Summary {
    mean_loss: f64,
    clipped_score: f64,
}

/// One seed's objective: the split, the box, the score range, the best-utility estimate and a
/// cache of per-point summaries shared by every instance of the seed.
#[derive(Debug)]
pub struct SvrProblem {
    split: SvrSplit,
    domain: Vec<(f64, f64)>,
    clip: ScoreClip,
    best: f64,
    summaries: Mutex<HashMap<Vec<u64>, Summary>>,
}

impl SvrProblem {
    /// The problem of `seed` on `data`; fits `config.best_samples` points for the estimate.
    pub fn new(data: &Dataset, config: &SvrConfig, seed: u64) -> Result<Self> {
        let split = SvrSplit::new(data, config, seed)?;
        let mut problem = SvrProblem {
            domain: config.profile.domain(config.features),
            clip: ScoreClip::new("clip", -config.clip, 0.0)?,
            split,
            best: f64::NAN,
            summaries: Mutex::default(),
        };
        let d = problem.domain.len();
        let mut rng = stream(seed, &[TAG, 1]);
        let sample: Vec<Hyper> = (0..config.best_samples)
            .map(|_| (0..d).map(|_| rng.random::<f64>()).collect())
            .collect();
        let losses = sample
            .par_iter()
            .map(|u| problem.summary(u).map(|s| s.mean_loss))
            .collect::<Result<Vec<f64>>>()?;
        problem.best = -losses.iter().copied().fold(f64::INFINITY, f64::min);
        Ok(problem)
    }

    pub fn split(&self) -> &SvrSplit {
        &self.split
    }

    /// The native box (ln ℓ…, ln ε, ln C, ln γ).
    pub fn domain(&self) -> &[(f64, f64)] {
        &self.domain
    }

    /// d = p + 3.
    pub fn dim(&self) -> usize {
        self.domain.len()
    }

    /// θ = lo + u·(hi − lo) for a point `u` of the unit box.
    pub fn theta(&self, u: &[f64]) -> Result<Vec<f64>> {
        if u.len() != self.dim() || u.iter().any(|v| !(0.0..=1.0).contains(v)) {
            return Err(Error::invalid(
                "hyperparameter",
                format!("{u:?}"),
                format!("{} numbers in [0, 1] (a point of the unit box)", self.dim()),
            ));
        }
        Ok(u.iter()
            .zip(&self.domain)
            .map(|(&v, &(lo, hi))| lo + v * (hi - lo))
            .collect())
    }

    /// The kernel and SVR parameters at `u`.
    pub fn model(&self, u: &[f64]) -> Result<(ArdRbf, SvrParams)> {
        let theta = self.theta(u)?;
        let p = self.dim() - 3;
        let kernel = ArdRbf::new(
            libm::exp(theta[p + 2]),
            theta[..p].iter().map(|l| libm::exp(*l)).collect(),
        )?;
        Ok((
            kernel,
            SvrParams::new(libm::exp(theta[p + 1]), libm::exp(theta[p]))?,
        ))
    }

    /// The SVR fitted on the training rows at `u`.
    pub fn fit(&self, u: &[f64]) -> Result<Svr> {
        let (kernel, params) = self.model(u)?;
        let s = &self.split;
        fit(s.train_x.view(), s.train_y.view(), &kernel, &params)
            .map_err(|e| Error::Numerical(format!("the SVR fit at u = {u:?}: {e}")))
    }

    /// L_i = ½(y_i − f(x_i))² for every validation row, at `u`.
    pub fn validation_losses(&self, u: &[f64]) -> Result<Vec<f64>> {
        let s = &self.split;
        let predicted = self.fit(u)?.predict(s.validation_x.view())?;
        let losses: Vec<f64> = s
            .validation_y
            .iter()
            .zip(&predicted)
            .map(|(y, f)| 0.5 * (y - f) * (y - f))
            .collect();
        self.remember(u, &losses);
        Ok(losses)
    }

    /// The mean loss at `u`: minus the oracle's utility.
    pub fn mean_loss(&self, u: &[f64]) -> Result<f64> {
        self.summary(u).map(|s| s.mean_loss)
    }

    /// The mean of the clipped scores −min(L_i, R) at `u`: what a run releases before noise.
    pub fn clipped_score(&self, u: &[f64]) -> Result<f64> {
        self.summary(u).map(|s| s.clipped_score)
    }

    fn summary(&self, u: &[f64]) -> Result<Summary> {
        let cached = self.cache().get(&key(u)).copied();
        match cached {
            Some(s) => Ok(s),
            None => Ok(self.summarise(&self.validation_losses(u)?)),
        }
    }

    fn summarise(&self, losses: &[f64]) -> Summary {
        let scores: Vec<f64> = losses.iter().map(|l| -l).collect();
        Summary {
            mean_loss: losses.iter().sum::<f64>() / losses.len() as f64,
            clipped_score: self.clip.mean(&scores),
        }
    }

    fn remember(&self, u: &[f64], losses: &[f64]) {
        let summary = self.summarise(losses);
        self.cache().insert(key(u), summary);
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, HashMap<Vec<u64>, Summary>> {
        self.summaries.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn key(u: &[f64]) -> Vec<u64> {
    u.iter().map(|v| v.to_bits()).collect()
}

/// One instance: a seed's problem and the release at noise multiplier z.
#[derive(Debug)]
pub struct SvrCtSlices {
    name: String,
    problem: Arc<SvrProblem>,
    space: Space,
    release: ClippedMeanRelease,
}

impl SvrCtSlices {
    pub fn new(name: &str, problem: Arc<SvrProblem>, noise_multiplier: f64) -> Result<Self> {
        Ok(SvrCtSlices {
            name: name.to_string(),
            space: Space::UnitBox { dim: problem.dim() },
            release: ClippedMeanRelease::new(
                problem.clip,
                problem.split.validation_y.len(),
                noise_multiplier,
            )?,
            problem,
        })
    }

    pub fn problem(&self) -> &SvrProblem {
        &self.problem
    }

    pub fn release(&self) -> &ClippedMeanRelease {
        &self.release
    }
}

impl PrivateTraining for SvrCtSlices {
    fn run_event(&self) -> &Event {
        self.release.event()
    }
    /// Off the box (or where the fit fails, which depends on the public training rows only)
    /// the run releases the lowest score −R plus the same noise, a data-independent value.
    fn train(&self, h: &Hyper, rng: &mut dyn RngCore) -> f64 {
        let mean = self
            .problem
            .clipped_score(h)
            .unwrap_or(self.release.clip().lo());
        self.release.release(mean, rng)
    }
}

impl Oracle for SvrCtSlices {
    /// −(mean validation loss) at `h` (NaN off the box: no model, stored as missing).
    fn utility(&self, h: &Hyper) -> f64 {
        self.problem.mean_loss(h).map_or(f64::NAN, |l| -l)
    }
    /// An estimate: the best utility over the seeded box sample (module docs).
    fn best_utility(&self) -> f64 {
        self.problem.best
    }
}

impl PerUserLosses for SvrCtSlices {
    fn n_users(&self) -> usize {
        self.problem.split.validation_y.len()
    }
    fn domain(&self) -> &[(f64, f64)] {
        &self.problem.domain
    }
    fn evaluation_sd(&self) -> f64 {
        0.0
    }
    /// Fits at the points in parallel (each fit is deterministic, so the thread count does not
    /// matter); the rng is not used.
    fn user_losses(&self, points: &[Hyper], _rng: &mut dyn RngCore) -> Result<Array2<f64>> {
        let columns = points
            .par_iter()
            .map(|u| self.problem.validation_losses(u))
            .collect::<Result<Vec<_>>>()?;
        let mut out = Array2::zeros((self.n_users(), points.len()));
        for (mut col, losses) in out.columns_mut().into_iter().zip(&columns) {
            col.assign(&ndarray::ArrayView1::from(losses.as_slice()));
        }
        Ok(out)
    }
}

impl Workload for SvrCtSlices {
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
    fn per_user_losses(&self) -> Option<&dyn PerUserLosses> {
        Some(self)
    }
}

/// Where the rows come from.
#[derive(Debug)]
enum Source {
    File { path: PathBuf, data: Dataset },
    StandIn,
}

/// The `svr-ct-slices` experiment-file workload: one variant (the data).
pub struct SvrCtSlicesSpec {
    source: Source,
    config: SvrConfig,
    noise: Option<f64>,
    problems: PerKey<u64, SvrProblem>,
}

/// A `[workload]` table of kind `svr-ct-slices`.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    path: Option<PathBuf>,
    profile: Option<String>,
    n_train: Option<Count>,
    n_validation: Option<Count>,
    features: Option<Count>,
    clip: Option<f64>,
    best_samples: Option<Count>,
    noise: Option<f64>,
}

/// Builds the spec from a `[workload]` table (kind = "svr-ct-slices").
pub fn spec(params: &toml::Table) -> Result<Box<dyn WorkloadSpec>> {
    Ok(Box::new(SvrCtSlicesSpec::from_params(params)?))
}

impl SvrCtSlicesSpec {
    /// Parameters: `path` (the UCI CSV; the synthetic stand-in without it), `profile`
    /// (`paper` or `code`), `n_train` (1000), `n_validation` (9000), `features` (100 for
    /// `paper`, 19 for `code`), `clip` (R, 2), `best_samples` (32) and `noise` (the noise
    /// multiplier z when no budget calibrates it).
    pub fn from_params(params: &toml::Table) -> Result<Self> {
        let p: Params = super::read("svr-ct-slices", params)?;
        let profile = Profile::parse(p.profile.as_deref().unwrap_or("paper"))?;
        let defaults = SvrConfig::new(profile);
        let size = |given: Option<Count>, default: usize| given.map_or(default, |v| v.0 as usize);
        let config = SvrConfig {
            profile,
            n_train: size(p.n_train, defaults.n_train),
            n_validation: size(p.n_validation, defaults.n_validation),
            features: size(p.features, defaults.features),
            clip: p.clip.unwrap_or(defaults.clip),
            best_samples: size(p.best_samples, defaults.best_samples),
        };
        let noise = p
            .noise
            .map(|z| Range::Positive.check("noise", z))
            .transpose()?;
        let source = match p.path {
            Some(path) => {
                let data = load_ct_slices(&path)?;
                Source::File { path, data }
            }
            None => Source::StandIn,
        };
        let rows = match &source {
            Source::File { data, .. } => data.len(),
            Source::StandIn => STAND_IN_ROWS,
        };
        config.validate(rows)?;
        Ok(SvrCtSlicesSpec {
            source,
            config,
            noise,
            problems: PerKey::default(),
        })
    }

    pub fn config(&self) -> &SvrConfig {
        &self.config
    }

    fn label(&self) -> &'static str {
        match self.source {
            Source::File { .. } => "ct-slices",
            Source::StandIn => "stand-in",
        }
    }

    /// The instance for experiment seed `seed` at noise multiplier `noise`; the seed's problem
    /// is built on the first call and then shared.
    pub fn workload(&self, seed: u64, noise: f64) -> Result<SvrCtSlices> {
        let problem = self.problems.get_or_build(seed, || match &self.source {
            Source::File { data, .. } => SvrProblem::new(data, &self.config, seed),
            Source::StandIn => SvrProblem::new(
                &synthetic_ct_slices(seed, STAND_IN_ROWS),
                &self.config,
                seed,
            ),
        })?;
        SvrCtSlices::new(&format!("svr-ct-slices({})", self.label()), problem, noise)
    }
}

impl WorkloadSpec for SvrCtSlicesSpec {
    fn kind(&self) -> &'static str {
        "svr-ct-slices"
    }
    fn params(&self) -> String {
        let c = &self.config;
        let data = match &self.source {
            Source::File { path, .. } => path.display().to_string(),
            Source::StandIn => format!("synthetic stand-in ({STAND_IN_ROWS} rows)"),
        };
        let b = c.profile.log_lengthscale_bound();
        format!(
            "data={data}, profile={}, n_train={}, n_validation={}, features={} ({}), \
             ln lengthscale in [-{b}, {b}], ln epsilon in [ln 0.01, ln 1], ln C in [ln 0.1, \
             ln 3], ln gamma in [ln 0.01, ln 5], loss=0.5*residual^2, score=-min(loss, {}), \
             best_samples={}",
            c.profile.name(),
            c.n_train,
            c.n_validation,
            c.features,
            match c.profile {
                Profile::Paper => "random subset per seed",
                Profile::Code => "the first columns",
            },
            c.clip,
            c.best_samples,
        )
    }
    fn variants(&self) -> Vec<Variant> {
        vec![Variant {
            label: self.label().into(),
            dim: self.config.features as u64 + 3,
        }]
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
        if variant != 0 {
            return Err(Error::invalid("variant", variant, "0 (the only variant)"));
        }
        Ok(Box::new(self.workload(seed, noise)?))
    }
}
