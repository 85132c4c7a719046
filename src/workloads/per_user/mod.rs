//! Per-user validation objectives for DP-GIBO (spec 004 §1.1): f_x(θ) = (1/n)·Σ_i L(θ, x_i)
//! over a native box Θ, where every user's loss L(θ, x_i) is observed (with evaluation noise
//! N(0, σ²) per user and point when σ > 0) each time a point is evaluated.
//!
//! * [`rff`]: synthetic per-user GP losses by random Fourier features (§4.2(a), `per-user-gp`);
//! * [`gp_lengthscales`]: tuning the ARD lengthscales of GP regression (§4.2(c),
//!   `gp-lengthscales`);
//! * [`location`]: the normal location model (E.3, `normal-location`) and robust linear
//!   regression (E.4, `robust-regression`).
//!
//! Each objective implements [`UserObjective`] in native coordinates; [`PerUserWorkload`] turns
//! it into a workload over the unit box (θ = lo + u·(hi − lo)) that offers the per-user losses
//! and, for the random-search tuners at equal budgets, private training runs.
//!
//! # A private run (random search on the same objective)
//!
//! Neighbouring data sets replace one user (n is public). A run at h evaluates every user's
//! loss once (with the evaluation noise), clips each to the public range [lo, hi] of the
//! objective (`[0, R]` for non-negative losses, `[−R, R]` for the signed synthetic losses; R
//! is the `clip` parameter) and releases the mean score −(1/n)·Σ_i clip(L_i) plus
//! N(0, (z·(hi − lo)/n)²) through [`ClippedMeanRelease`]: the Gaussian mechanism of sensitivity
//! (hi − lo)/n, 1/(2z²)-zCDP whatever h and the data, with z the `noise` knob that equal-budget
//! calibration turns.
//!
//! # The oracle (reporting only)
//!
//! The utility is −f_x(θ), the noise-free, unclipped mean loss. The best utility is exact over a
//! finite grid; over the box it is −min f_x where the minimiser is known (E.3, E.4), otherwise
//! the best of a fixed seeded sample of `oracle_points` uniform points (plus the data-generating
//! point where the objective knows one): an estimate, so regrets can be slightly negative.

pub mod gp_lengthscales;
pub mod location;
pub mod rff;

use super::validation_score::{ClippedMeanRelease, PerKey, ScoreClip};
use super::{Hyper, Oracle, PerUserLosses, PrivateTraining, Space, Workload};
use crate::accounting::Event;
use crate::error::{Error, Range, Result};
use crate::params::{Count, OneOrMany};
use crate::rng::{normal, stream};
use ndarray::{Array1, Array2};
use rand::{Rng, RngCore};
use rayon::prelude::*;
use std::sync::Arc;

/// Stream tag of the oracle's sample of the box ("best").
const BEST_TAG: u64 = 0x6265_7374;
/// Stream tag of a random candidate grid ("grid").
const GRID_TAG: u64 = 0x6772_6964;

/// A validation objective made of n per-user losses on a native box.
pub trait UserObjective: Send + Sync {
    /// The native box Θ, per coordinate (lo, hi).
    fn domain(&self) -> &[(f64, f64)];
    /// The number of users n.
    fn n_users(&self) -> usize;
    /// Every user's noise-free loss L(θ, x_i) at the native point θ.
    fn losses(&self, theta: &[f64]) -> Result<Array1<f64>>;
    /// The noise-free mean loss f_x(θ).
    fn mean_loss(&self, theta: &[f64]) -> Result<f64> {
        let l = self.losses(theta)?;
        Ok(l.sum() / l.len() as f64)
    }
    /// Every user's exact gradient ∇_θ L(θ, x_i) (d × n), when the objective has it.
    fn gradients(&self, _theta: &[f64]) -> Option<Array2<f64>> {
        None
    }
    /// The exact minimiser of f_x over the box and the minimum, when known.
    fn minimum(&self) -> Option<(Vec<f64>, f64)> {
        None
    }
    /// A native point known to be good (e.g. the data-generating one), which the oracle adds
    /// to its sample of the box.
    fn reference_point(&self) -> Option<Vec<f64>> {
        None
    }
    /// The public prior lengthscales of the objective (native units), when it is drawn from a
    /// declared GP (spec 004 §4.2(a): DP-GIBO's surrogate may use them, as [GIBO] does).
    fn prior_lengthscales(&self) -> Option<Vec<f64>> {
        None
    }
}

/// The native point lo + u·(hi − lo) of a unit-box point.
pub fn to_native(domain: &[(f64, f64)], u: &[f64]) -> Vec<f64> {
    domain
        .iter()
        .zip(u)
        .map(|(&(lo, hi), &v)| lo + v * (hi - lo))
        .collect()
}

/// The unit-box point of a native point (the inverse of [`to_native`]).
pub fn to_unit(domain: &[(f64, f64)], theta: &[f64]) -> Vec<f64> {
    domain
        .iter()
        .zip(theta)
        .map(|(&(lo, hi), &t)| (t - lo) / (hi - lo))
        .collect()
}

/// An objective with the best utility over a space.
pub struct Prepared {
    objective: Arc<dyn UserObjective>,
    best_utility: f64,
}

impl Prepared {
    /// Computes the best utility of `objective` over `space` (see the module docs; NaN when no
    /// point could be evaluated). Points are evaluated in parallel; the maximum does not
    /// depend on their order.
    pub fn new(objective: Arc<dyn UserObjective>, space: &Space, oracle_points: usize) -> Self {
        let domain = objective.domain().to_vec();
        let native: Vec<Vec<f64>> = match space {
            Space::Finite(c) => c.iter().map(|h| to_native(&domain, h)).collect(),
            Space::UnitBox { dim } => {
                if let Some((_, min)) = objective.minimum() {
                    return Prepared {
                        objective,
                        best_utility: -min,
                    };
                }
                let mut rng = stream(BEST_TAG, &[*dim as u64]);
                let mut points: Vec<Vec<f64>> = (0..oracle_points)
                    .map(|_| {
                        let u: Vec<f64> = (0..*dim).map(|_| rng.random::<f64>()).collect();
                        to_native(&domain, &u)
                    })
                    .collect();
                points.extend(objective.reference_point());
                points
            }
        };
        let best_utility = native
            .par_iter()
            .map(|theta| objective.mean_loss(theta).map_or(f64::NAN, |l| -l))
            .collect::<Vec<f64>>()
            .into_iter()
            .filter(|u| u.is_finite())
            .fold(f64::NAN, f64::max);
        Prepared {
            objective,
            best_utility,
        }
    }

    pub fn objective(&self) -> &dyn UserObjective {
        self.objective.as_ref()
    }

    pub fn best_utility(&self) -> f64 {
        self.best_utility
    }
}

/// Builds an objective on first use (for objectives that are cheap to describe but costly to
/// draw, so that instances asked for only their privacy cost nothing).
pub type Builder = Box<dyn Fn() -> Prepared + Send + Sync>;

/// An objective built already or on first use. The first use builds it on a fresh thread with
/// its own rayon pool ([`PerKey`]), so a tuner that evaluates an instance from several rayon
/// tasks cannot deadlock on the build.
enum State {
    Ready(Arc<Prepared>),
    Deferred {
        cache: PerKey<(), Prepared>,
        build: Builder,
    },
}

/// Where a workload's objective comes from.
pub enum Source {
    /// Built already (and typically shared between repetitions).
    Ready(Arc<Prepared>),
    /// Built on first use; the box and n are known in advance.
    Deferred {
        domain: Vec<(f64, f64)>,
        n_users: usize,
        build: Builder,
    },
}

/// The `[workload]` parameters every per-user objective takes.
#[derive(Clone, Debug, PartialEq)]
pub struct CommonParams {
    /// A random grid of this many points (per instance) instead of the continuous box.
    pub candidates: Option<usize>,
    /// σ of the evaluation noise added to every loss (0: exact evaluations).
    pub evaluation_sd: f64,
    /// The public range [lo, hi] a run clips each loss to.
    pub loss_clip: ScoreClip,
    /// Uniform points of the oracle's estimate of the best utility over the box.
    pub oracle_points: usize,
    /// The noise multiplier z of a private run, when no budget calibrates it.
    pub noise: Option<f64>,
}

/// The parameters every per-user workload takes, as written in its `[workload]` table.
#[derive(serde::Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct CommonFields {
    candidates: Option<Count>,
    /// One sd, or (`gp-lengthscales`) a list swept as variants.
    pub evaluation_sd: Option<OneOrMany<f64>>,
    clip: Option<f64>,
    oracle_points: Option<Count>,
    noise: Option<f64>,
}

/// The keys of [`CommonFields`].
pub const COMMON_KEYS: [&str; 5] = [
    "candidates",
    "evaluation_sd",
    "clip",
    "oracle_points",
    "noise",
];

/// Reads a per-user workload's own parameters `T` and the common ones (those of `common`
/// among [`COMMON_KEYS`]; a key of the others is refused as unknown).
pub fn read_with_common<T: serde::de::DeserializeOwned>(
    kind: &str,
    params: &toml::Table,
    common: &[&str],
) -> Result<(T, CommonFields)> {
    let owner = format!("workload `{kind}`");
    let mut aside = vec!["kind"];
    aside.extend(common);
    let own = crate::params::read_except(&owner, params, &aside)?;
    let shared: toml::Table = common
        .iter()
        .filter_map(|&k| params.get(k).map(|v| (k.to_string(), v.clone())))
        .collect();
    Ok((own, crate::params::read(&owner, &shared)?))
}

impl CommonParams {
    /// From the common fields at evaluation sd `evaluation_sd`; `clip` R (default
    /// `default_clip`) gives the loss range [−R, R] when `signed`, else [0, R].
    pub fn new(
        fields: &CommonFields,
        evaluation_sd: f64,
        signed: bool,
        default_clip: f64,
        default_oracle_points: usize,
    ) -> Result<Self> {
        let r = Range::Positive.check("clip", fields.clip.unwrap_or(default_clip))?;
        Ok(CommonParams {
            candidates: match fields.candidates {
                Some(c) => Some(c.at_least("candidates", 1)? as usize),
                None => None,
            },
            evaluation_sd: Range::NonNegative.check("evaluation_sd", evaluation_sd)?,
            loss_clip: ScoreClip::new("clip", if signed { -r } else { 0.0 }, r)?,
            oracle_points: fields
                .oracle_points
                .map_or(default_oracle_points, |p| p.0 as usize),
            noise: fields
                .noise
                .map(|z| Range::Positive.check("noise", z))
                .transpose()?,
        })
    }

    /// From the common fields, whose `evaluation_sd` must be one number (default 0).
    pub fn read(
        fields: &CommonFields,
        signed: bool,
        default_clip: f64,
        default_oracle_points: usize,
    ) -> Result<Self> {
        let sd = match &fields.evaluation_sd {
            None => 0.0,
            Some(OneOrMany::One(sd)) => *sd,
            Some(OneOrMany::Many(v)) => {
                return Err(Error::invalid(
                    "evaluation_sd",
                    format!("{v:?}"),
                    "a number",
                ))
            }
        };
        Self::new(fields, sd, signed, default_clip, default_oracle_points)
    }

    /// The space of an instance: a random grid drawn from (seed, [grid tag, path…]), or the
    /// unit box.
    pub fn space(&self, dim: usize, seed: u64, path: &[u64]) -> Result<Space> {
        match self.candidates {
            Some(m) => {
                let full: Vec<u64> = std::iter::once(GRID_TAG)
                    .chain(path.iter().copied())
                    .collect();
                Space::random_grid(dim, m, &mut stream(seed, &full))
            }
            None => Ok(Space::UnitBox { dim }),
        }
    }

    /// For the `workload_params` column.
    pub fn describe(&self) -> String {
        let oracle = match self.oracle_points {
            0 => String::new(),
            p => format!(", oracle_points={p}"),
        };
        format!(
            "candidates={}, evaluation_sd={}, loss clip=[{}, {}]{oracle}",
            self.candidates.map_or("box".to_string(), |c| c.to_string()),
            self.evaluation_sd,
            self.loss_clip.lo(),
            self.loss_clip.hi(),
        )
    }
}

/// A per-user objective as a workload over the unit box (or a grid in it).
pub struct PerUserWorkload {
    name: String,
    space: Space,
    domain: Vec<(f64, f64)>,
    n_users: usize,
    evaluation_sd: f64,
    loss_clip: ScoreClip,
    release: ClippedMeanRelease,
    state: State,
}

impl PerUserWorkload {
    /// The workload of `source` on `space` with the common parameters and noise multiplier
    /// `noise` (z > 0) of a private run.
    pub fn new(
        name: String,
        space: Space,
        source: Source,
        common: &CommonParams,
        noise: f64,
    ) -> Result<Self> {
        let (domain, n_users, state) = match source {
            Source::Ready(p) => {
                let o = p.objective();
                (o.domain().to_vec(), o.n_users(), State::Ready(p))
            }
            Source::Deferred {
                domain,
                n_users,
                build,
            } => (
                domain,
                n_users,
                State::Deferred {
                    cache: PerKey::default(),
                    build,
                },
            ),
        };
        if space.dim() != domain.len() {
            return Err(Error::invalid(
                "space",
                space.dim(),
                format!("dimension {} (the objective's)", domain.len()),
            ));
        }
        let loss_clip = common.loss_clip;
        // A run's score is −loss, so the score range is [−hi, −lo].
        let score_clip = ScoreClip::new("clip", -loss_clip.hi(), -loss_clip.lo())?;
        Ok(PerUserWorkload {
            name,
            space,
            domain,
            n_users,
            evaluation_sd: common.evaluation_sd,
            loss_clip,
            release: ClippedMeanRelease::new(score_clip, n_users, noise)?,
            state,
        })
    }

    /// The objective and the oracle's best utility (built on first use).
    pub fn prepared(&self) -> Result<Arc<Prepared>> {
        match &self.state {
            State::Ready(p) => Ok(Arc::clone(p)),
            State::Deferred { cache, build } => cache.get_or_build((), || Ok(build())),
        }
    }

    /// The release of a private run.
    pub fn release(&self) -> &ClippedMeanRelease {
        &self.release
    }

    /// The range each loss is clipped to in a private run.
    pub fn loss_clip(&self) -> ScoreClip {
        self.loss_clip
    }

    /// The native point of the unit-box point `h`, or an error naming the point.
    pub fn native(&self, h: &[f64]) -> Result<Vec<f64>> {
        if h.len() != self.domain.len() || h.iter().any(|v| !v.is_finite()) {
            return Err(Error::invalid(
                "point",
                format!("{h:?}"),
                format!(
                    "{} finite unit-box coordinates (θ = lo + u·(hi − lo))",
                    self.domain.len()
                ),
            ));
        }
        Ok(to_native(&self.domain, h))
    }

    /// Adds N(0, σ²) to each loss, in order, when σ > 0 (exact evaluations draw nothing).
    fn add_evaluation_noise(&self, losses: &mut [f64], rng: &mut dyn RngCore) {
        if self.evaluation_sd > 0.0 {
            for l in losses {
                *l += self.evaluation_sd * normal(rng);
            }
        }
    }
}

impl PerUserLosses for PerUserWorkload {
    fn n_users(&self) -> usize {
        self.n_users
    }
    fn domain(&self) -> &[(f64, f64)] {
        &self.domain
    }
    fn evaluation_sd(&self) -> f64 {
        self.evaluation_sd
    }
    /// Noise-free losses are computed point by point (in parallel); the noise is then drawn
    /// point by point, user by user within a point. Points outside the unit box are evaluated
    /// by the same formulas.
    fn user_losses(&self, points: &[Hyper], rng: &mut dyn RngCore) -> Result<Array2<f64>> {
        let native = points
            .iter()
            .map(|h| self.native(h))
            .collect::<Result<Vec<_>>>()?;
        let prepared = self.prepared()?;
        let objective = prepared.objective();
        let columns = native
            .par_iter()
            .map(|theta| objective.losses(theta))
            .collect::<Result<Vec<_>>>()?;
        let mut out = Array2::zeros((self.n_users, points.len()));
        for (j, mut column) in columns.into_iter().enumerate() {
            self.add_evaluation_noise(column.as_slice_mut().expect("contiguous"), rng);
            out.column_mut(j).assign(&column);
        }
        Ok(out)
    }
    /// The exact gradients at the unit-box point `point`, in native coordinates.
    fn user_gradients(&self, point: &Hyper) -> Option<Array2<f64>> {
        let theta = self.native(point).ok()?;
        self.prepared().ok()?.objective().gradients(&theta)
    }
    fn prior_lengthscales(&self) -> Option<Vec<f64>> {
        self.prepared().ok()?.objective().prior_lengthscales()
    }
}

impl PrivateTraining for PerUserWorkload {
    fn run_event(&self) -> &Event {
        self.release.event()
    }
    /// When the losses cannot be computed at `h` (a bad point, or a model that cannot be
    /// fitted there — data-independent failures), the run releases the lowest score plus the
    /// same noise.
    fn train(&self, h: &Hyper, rng: &mut dyn RngCore) -> f64 {
        let losses = self
            .native(h)
            .and_then(|theta| self.prepared()?.objective().losses(&theta));
        let mean = match losses {
            Ok(mut l) => {
                let l = l.as_slice_mut().expect("contiguous");
                self.add_evaluation_noise(l, rng);
                let scores: Vec<f64> = l.iter().map(|v| -v).collect();
                self.release.clipped_mean(&scores)
            }
            Err(_) => self.release.clip().lo(),
        };
        self.release.release(mean, rng)
    }
}

impl Oracle for PerUserWorkload {
    /// −f_x(θ), noise-free and unclipped (NaN where it cannot be computed).
    fn utility(&self, h: &Hyper) -> f64 {
        self.native(h)
            .and_then(|theta| self.prepared()?.objective().mean_loss(&theta))
            .map_or(f64::NAN, |l| -l)
    }
    fn best_utility(&self) -> f64 {
        self.prepared().map_or(f64::NAN, |p| p.best_utility())
    }
}

impl Workload for PerUserWorkload {
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

/// Central finite differences of every user's loss (d × n), for tests of exact gradients.
#[cfg(test)]
pub(crate) fn finite_difference_gradients(
    objective: &dyn UserObjective,
    theta: &[f64],
    step: f64,
) -> Array2<f64> {
    let d = theta.len();
    let mut out = Array2::zeros((d, objective.n_users()));
    for j in 0..d {
        let (mut plus, mut minus) = (theta.to_vec(), theta.to_vec());
        plus[j] += step;
        minus[j] -= step;
        let diff =
            (objective.losses(&plus).unwrap() - objective.losses(&minus).unwrap()) / (2.0 * step);
        out.row_mut(j).assign(&diff);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A toy objective: L_i(θ) = (θ − i)² on [0, 4].
    struct Toy;
    impl UserObjective for Toy {
        fn domain(&self) -> &[(f64, f64)] {
            &[(0.0, 4.0)]
        }
        fn n_users(&self) -> usize {
            3
        }
        fn losses(&self, theta: &[f64]) -> Result<Array1<f64>> {
            Ok(Array1::from_shape_fn(3, |i| (theta[0] - i as f64).powi(2)))
        }
    }

    fn toy(evaluation_sd: f64, noise: f64, space: Space) -> PerUserWorkload {
        let common = CommonParams {
            candidates: None,
            evaluation_sd,
            loss_clip: ScoreClip::new("clip", 0.0, 2.0).unwrap(),
            oracle_points: 64,
            noise: None,
        };
        let prepared = Prepared::new(Arc::new(Toy), &space, 64);
        PerUserWorkload::new(
            "toy".into(),
            space,
            Source::Ready(Arc::new(prepared)),
            &common,
            noise,
        )
        .unwrap()
    }

    #[test]
    fn units_map_to_the_native_box() {
        let w = toy(0.0, 1.0, Space::UnitBox { dim: 1 });
        assert_eq!(w.native(&[0.25]).unwrap(), vec![1.0]);
        assert_eq!(to_unit(&[(0.0, 4.0)], &[1.0]), vec![0.25]);
        assert!(w.native(&[0.1, 0.2]).is_err());
        assert!(w.native(&[f64::NAN]).is_err());
        // f(θ) = ((θ)² + (θ − 1)² + (θ − 2)²)/3 at θ = 1: 2/3.
        assert!((w.utility(&vec![0.25]) + 2.0 / 3.0).abs() < 1e-15);
        // The best of 64 uniform points is near the minimum −2/3 at θ = 1.
        assert!(w.best_utility() <= -2.0 / 3.0 && w.best_utility() > -0.7);
        let grid = toy(0.0, 1.0, Space::Finite(vec![vec![0.0], vec![0.5]]));
        // Grid values: f(0) = 5/3, f(2) = 5/3.
        assert!((grid.best_utility() + 5.0 / 3.0).abs() < 1e-15);
    }

    /// A run releases −(1/n)·Σ clip(L_i, 0, R) plus N(0, (z·R/n)²): the losses at θ = 1 are
    /// (1, 0, 1), clipped (1, 0, 1), so the mean score is −2/3; the curve is that of the
    /// Gaussian mechanism with ρ = 1/(2z²).
    #[test]
    fn a_run_releases_the_clipped_mean_with_the_declared_noise() {
        let z = 1.5;
        let w = toy(0.0, z, Space::UnitBox { dim: 1 });
        assert!((w.release().sigma() - z * 2.0 / 3.0).abs() < 1e-15);
        for alpha in [1.5, 2.0, 8.0] {
            let want = alpha / (2.0 * z * z);
            assert!((crate::workloads::run_curve(&w).eval(alpha).unwrap() - want).abs() < 1e-12);
        }
        let mut rng = stream(3, &[]);
        let n = 40_000;
        let xs: Vec<f64> = (0..n).map(|_| w.train(&vec![0.25], &mut rng)).collect();
        let mean = xs.iter().sum::<f64>() / n as f64;
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
        let sigma2 = (z * 2.0 / 3.0f64).powi(2);
        assert!(
            (mean + 2.0 / 3.0).abs() < 4.0 * (sigma2 / n as f64).sqrt(),
            "{mean}"
        );
        assert!((var / sigma2 - 1.0).abs() < 0.03, "{var} vs {sigma2}");
        // Clipping: at θ = 4 the losses (16, 9, 4) clip to 2 each: score −2.
        let w0 = toy(0.0, 1e-9, Space::UnitBox { dim: 1 });
        assert!((w0.train(&vec![1.0], &mut rng) + 2.0).abs() < 1e-6);
        // A bad point releases the lowest score.
        assert!((w0.train(&vec![1.0, 2.0], &mut rng) + 2.0).abs() < 1e-6);
    }

    #[test]
    fn evaluation_noise_has_the_declared_variance() {
        let sd = 0.3;
        let w = toy(sd, 1.0, Space::UnitBox { dim: 1 });
        let mut rng = stream(4, &[]);
        let points: Vec<Hyper> = (0..2000).map(|i| vec![(i % 5) as f64 / 4.0]).collect();
        let noisy = w.user_losses(&points, &mut rng).unwrap();
        assert_eq!(noisy.dim(), (3, 2000));
        let exact = toy(0.0, 1.0, Space::UnitBox { dim: 1 })
            .user_losses(&points, &mut rng)
            .unwrap();
        let e = &noisy - &exact;
        let n = e.len() as f64;
        let mean = e.sum() / n;
        let var = e.mapv(|v| (v - mean).powi(2)).sum() / (n - 1.0);
        assert!(mean.abs() < 4.0 * sd / n.sqrt(), "{mean}");
        // sd of the sample variance ≈ σ²·√(2/n).
        assert!(
            (var - sd * sd).abs() < 4.0 * sd * sd * (2.0 / n).sqrt(),
            "{var}"
        );
        // Reproducible for the same stream.
        let again = w.user_losses(&points, &mut stream(4, &[])).unwrap();
        assert_eq!(again, noisy);
    }

    #[test]
    fn common_parameters_are_validated() {
        let fields = |s: &str| -> Result<CommonFields> {
            crate::params::read("workload `t`", &toml::from_str(s).unwrap())
        };
        let parse = |s: &str| CommonParams::read(&fields(s)?, false, 1.0, 8);
        let c = parse("candidates = 5\nevaluation_sd = 0.1\nclip = 3").unwrap();
        assert_eq!(c.candidates, Some(5));
        assert_eq!((c.loss_clip.lo(), c.loss_clip.hi()), (0.0, 3.0));
        let signed = CommonParams::read(&CommonFields::default(), true, 2.0, 8).unwrap();
        assert_eq!((signed.loss_clip.lo(), signed.loss_clip.hi()), (-2.0, 2.0));
        for (bad, name) in [
            ("clip = 0", "clip"),
            ("evaluation_sd = -1", "evaluation_sd"),
            ("evaluation_sd = [0, 1]", "evaluation_sd"),
            ("noise = 0", "noise"),
            ("candidates = 0", "candidates"),
            ("clipp = 1", "clipp"),
        ] {
            let e = parse(bad).unwrap_err().to_string();
            assert!(e.contains(name), "{bad}: {e}");
        }
        let dims = |s: &str| {
            #[derive(serde::Deserialize)]
            struct D {
                dims: Option<OneOrMany<Count>>,
            }
            let d: D = crate::params::read("workload `t`", &toml::from_str(s).unwrap()).unwrap();
            crate::workloads::dims(d.dims, &[4])
        };
        assert!(dims("dims = [2, 101]")
            .unwrap_err()
            .to_string()
            .contains("dims"));
        assert_eq!(dims("").unwrap(), vec![4]);
        assert_eq!(dims("dims = 3").unwrap(), vec![3]);
    }
}
