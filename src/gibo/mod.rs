//! DP-GIBO (spec 004; Sopa, Marusic, Avella-Medina, Cunningham 2025): local Bayesian
//! optimisation that follows a privatised estimate of the validation loss's gradient, and its
//! baseline DP-GD (noisy gradient descent on exact per-user gradients).
//!
//! Each iteration t of [`run`] chooses new points near θ_t from the kernel alone
//! ([`acquisition`]), evaluates every user's loss there, fits each user's surrogate gradient
//! g_t^(i) = A K_y⁻¹ y_i ([`GradientPosterior`]), clips each to norm B, averages, and releases
//! ĝ_t = g_t + s·w_t, w_t ~ N(0, I_d), s = 2B√T/(nμ). The step rule and the projection on the
//! box are post-processing of ĝ_t.
//!
//! # Privacy (spec 004 §1.5–1.6, Theorem 3.1)
//! The released path θ_1..θ_T (hence θ_T) is **μ-GDP** for neighbouring validation sets that
//! **replace one user** (n public): replacing one user moves the clipped mean by at most 2B/n,
//! so each step is (μ/√T)-GDP given the past and T steps compose to μ. The conversion to
//! (ε, δ) uses the exact GDP curve; μ-GDP also implies (μ²/2)-zCDP. The guarantee covers the
//! validation users only (training-data privacy is out of scope). It holds when:
//! - θ_0, T, B, the step rule and η, the kernel and its hyperparameters, the model noise, the
//!   bias tolerance and the batch mode are fixed before seeing data (a [`DpGiboConfig`] is
//!   immutable during a run, θ_0 comes from its own stream, the kernel is never fitted);
//! - nothing else derived from the losses is released: no loss values and no "best iterate"
//!   (choosing an iterate by validation loss would need its own private selection). The
//!   [`Iteration`] diagnostics passed to `observe` are **not** private; they are for
//!   simulations only and must never feed back into the tuning.
//! - point selection reads only the kernel, θ_t and the design (never losses).
//!
//! μ = ∞ gives non-private GIBO: no noise, clipping kept.

pub mod acquisition;
pub mod session;

pub use acquisition::{select_points, Acquisition, BatchMode, PointOptimiser, Selection};
pub use session::GiboSession;
// The surrogate kernel and the gradient posterior are the GP stack's (`crate::gp`).
pub use crate::gp::{GradientPosterior, SurrogateKernel};

use crate::error::{fmt_num, Error, Range, Result};
use crate::rng::stream;
use crate::workloads::{Hyper, PerUserLosses};
use ndarray::{Array1, Array2, ArrayView1, ArrayView2, Axis};
use rand::{Rng, RngCore};

/// Stream purposes, derived from one draw of the caller's stream.
const STREAM_INIT: u64 = 1;
const STREAM_EVALUATIONS: u64 = 2;
const STREAM_POINTS: u64 = 3;
const STREAM_PRIVACY: u64 = 4;

// ---------------------------------------------------------------------------------------------
// Privacy

// GDP's μ, its (ε, δ) report and its inversion for a budget live with the other conversions;
// the clipped-mean gradient release with the other mechanisms.
pub use crate::accounting::clipped_mean::{clipped_mean, noise_std, release_clipped_mean};
pub use crate::accounting::convert::{check_mu, gdp_report, mu_for_budget, GdpReport};

/// Lemma A.5: for w_1..w_T iid N(0, I_d), max_t ‖w_t‖ ≤ q = 4√d + 2√(2 ln(T/δ)) with
/// probability at least 1 − δ.
pub fn noise_norm_bound(dim: usize, steps: usize, delta: f64) -> f64 {
    4.0 * (dim as f64).sqrt() + 2.0 * (2.0 * libm::log(steps as f64 / delta)).sqrt()
}

// ---------------------------------------------------------------------------------------------
// Steps

/// How θ moves along the released gradient ĝ (spec 004 §1.7). All are post-processing.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum StepRule {
    /// θ ← θ − η ĝ (Algorithm 1 as written).
    Sgd { eta: f64 },
    /// G ← G + ĝ⊙ĝ; θ ← θ − η ĝ/(√G + 1e-8) (the seed's experiments; the default).
    AdaGrad { eta: f64 },
    /// θ ← θ − η (ℓ⊙ĝ)/‖ĝ‖ with the kernel's lengthscales ℓ (GIBO's non-private reference).
    GiboNormalized { eta: f64 },
}

impl StepRule {
    /// The rule named `name` (`sgd`, `adagrad`, `gibo-normalized`) with step size `eta`.
    pub fn parse(name: &str, eta: f64) -> Result<Self> {
        let eta = Range::Positive.check("eta", eta)?;
        match name {
            "sgd" => Ok(StepRule::Sgd { eta }),
            "adagrad" => Ok(StepRule::AdaGrad { eta }),
            "gibo-normalized" => Ok(StepRule::GiboNormalized { eta }),
            other => Err(Error::invalid(
                "step_rule",
                other,
                "\"adagrad\", \"sgd\" or \"gibo-normalized\"",
            )),
        }
    }

    pub fn eta(&self) -> f64 {
        match *self {
            StepRule::Sgd { eta }
            | StepRule::AdaGrad { eta }
            | StepRule::GiboNormalized { eta } => eta,
        }
    }

    pub fn describe(&self) -> String {
        let name = match self {
            StepRule::Sgd { .. } => "sgd",
            StepRule::AdaGrad { .. } => "adagrad",
            StepRule::GiboNormalized { .. } => "gibo-normalized",
        };
        format!("{name}({})", fmt_num(self.eta()))
    }

    fn check(&self) -> Result<()> {
        Range::Positive.check("eta", self.eta()).map(|_| ())
    }
}

/// A step rule with its state (AdaGrad's sum of squares), applied then projected on a box.
struct Stepper {
    rule: StepRule,
    sum_sq: Array1<f64>,
    scales: Vec<f64>,
}

impl Stepper {
    fn new(rule: StepRule, scales: &[f64]) -> Self {
        Stepper {
            rule,
            sum_sq: Array1::zeros(scales.len()),
            scales: scales.to_vec(),
        }
    }

    /// θ moved along −ĝ and clamped to `domain`.
    fn step(&mut self, theta: &Array1<f64>, g: &Array1<f64>, domain: &[(f64, f64)]) -> Array1<f64> {
        let mut next = theta.clone();
        match self.rule {
            StepRule::Sgd { eta } => next.scaled_add(-eta, g),
            StepRule::AdaGrad { eta } => {
                self.sum_sq.zip_mut_with(g, |s, gi| *s += gi * gi);
                for ((t, gi), s) in next.iter_mut().zip(g).zip(&self.sum_sq) {
                    *t -= eta * gi / (s.sqrt() + 1e-8);
                }
            }
            StepRule::GiboNormalized { eta } => {
                let norm = g.dot(g).sqrt();
                if norm > 0.0 {
                    for ((t, gi), l) in next.iter_mut().zip(g).zip(&self.scales) {
                        *t -= eta * l * gi / norm;
                    }
                }
            }
        }
        for (t, &(lo, hi)) in next.iter_mut().zip(domain) {
            *t = t.clamp(lo, hi);
        }
        next
    }
}

// ---------------------------------------------------------------------------------------------
// Configuration

/// Which past design points the surrogate of step t reuses (spec 004 §5.3). Privacy is
/// unaffected: the history is data-independent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum History {
    /// Every past point (the paper).
    All,
    /// The C past points closest to θ_t (Euclidean, native units; ties to the oldest).
    Closest(usize),
    /// Only the new points ([code]'s default, C = 0).
    None,
}

impl History {
    pub fn describe(&self) -> String {
        match self {
            History::All => "all".into(),
            History::Closest(c) => format!("closest({c})"),
            History::None => "none".into(),
        }
    }

    /// Indices of the kept rows of `x` for the iterate θ.
    fn select(&self, x: ArrayView2<f64>, theta: ArrayView1<f64>) -> Vec<usize> {
        match *self {
            History::All => (0..x.nrows()).collect(),
            History::None => Vec::new(),
            History::Closest(c) => {
                let mut by_distance: Vec<(f64, usize)> = x
                    .rows()
                    .into_iter()
                    .enumerate()
                    .map(|(i, r)| ((&r - &theta).mapv(|v| v * v).sum(), i))
                    .collect();
                by_distance.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
                by_distance.into_iter().take(c).map(|(_, i)| i).collect()
            }
        }
    }
}

/// Everything DP-GIBO fixes before it sees data (spec 004 §1.6).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DpGiboConfig {
    /// μ of μ-GDP for the whole path (f64::INFINITY: non-private, no noise).
    pub mu: f64,
    /// T, the number of iterations (released gradients).
    pub steps: usize,
    /// B, the per-user clip norm of the surrogate gradients (native units).
    pub clip: f64,
    pub batch: BatchMode,
    pub step_rule: StepRule,
    pub kernel: SurrogateKernel,
    /// The model's evaluation-noise standard deviation σ (0: noiseless; jitters are added).
    pub noise_sd: f64,
    pub history: History,
    pub points: PointOptimiser,
    /// Added to σ² in the K_y of the mean gradient (1e-9, as [code]).
    pub mean_jitter: f64,
    /// θ_0 in native units; `None`: uniform in the box from the run's own stream.
    pub theta0: Option<Vec<f64>>,
    /// [lo, hi]: every user's loss is clamped into it before any gradient (a per-user map, so
    /// the guarantee is unchanged); `None`: losses are used as told.
    #[serde(default)]
    pub loss_range: Option<(f64, f64)>,
}

impl DpGiboConfig {
    /// Defaults: AdaGrad η = 0.3, fixed batch b = d + 1, all history, [code]'s optimiser.
    pub fn new(mu: f64, steps: usize, clip: f64, kernel: SurrogateKernel, noise_sd: f64) -> Self {
        let d = kernel.dim();
        DpGiboConfig {
            mu,
            steps,
            clip,
            batch: BatchMode::Fixed { b: d + 1 },
            step_rule: StepRule::AdaGrad { eta: 0.3 },
            kernel,
            noise_sd,
            history: History::All,
            points: PointOptimiser::default(),
            mean_jitter: 1e-9,
            theta0: None,
            loss_range: None,
        }
    }

    /// Checks every parameter against a box of dimension d.
    pub fn validate(&self, domain: &[(f64, f64)]) -> Result<()> {
        check_common(self.mu, self.steps, self.clip, &self.step_rule)?;
        check_domain(domain)?;
        let d = domain.len();
        if self.kernel.dim() != d {
            return Err(Error::invalid(
                "lengthscale",
                format!("{} values", self.kernel.dim()),
                format!("one per dimension of the workload's box ({d})"),
            ));
        }
        Range::NonNegative.check("noise_sd", self.noise_sd)?;
        Range::NonNegative.check("mean_jitter", self.mean_jitter)?;
        match self.batch {
            BatchMode::Adaptive { eps_bias, b_max } => {
                Range::NonNegative.check("eps_bias", eps_bias)?;
                if b_max == 0 {
                    return Err(Error::invalid("b_max", 0, "an integer >= 1"));
                }
            }
            BatchMode::Fixed { b } => {
                if b == 0 {
                    return Err(Error::invalid("batch", 0, "an integer >= 1"));
                }
            }
        }
        let p = &self.points;
        Range::Positive.check("select_lr", p.lr)?;
        Range::NonNegative.check("start_sd", p.start_sd)?;
        Range::NonNegative.check("jitter", p.jitter)?;
        if let Some(r) = p.local_box {
            Range::Positive.check("local_box", r)?;
        }
        if let Some(t0) = &self.theta0 {
            check_theta0(t0, domain)?;
        }
        if let Some((lo, hi)) = self.loss_range {
            if !(lo.is_finite() && hi.is_finite() && lo < hi) {
                return Err(Error::invalid(
                    "loss_range",
                    format!("[{lo}, {hi}]"),
                    "[lo, hi]: two finite numbers with lo < hi",
                ));
            }
        }
        Ok(())
    }
}

fn check_common(mu: f64, steps: usize, clip: f64, rule: &StepRule) -> Result<()> {
    check_mu(mu)?;
    if steps == 0 {
        return Err(Error::invalid("steps", 0, "an integer >= 1"));
    }
    Range::Positive.check("clip", clip)?;
    rule.check()
}

fn check_domain(domain: &[(f64, f64)]) -> Result<()> {
    if domain.is_empty() {
        return Err(Error::invalid("domain", "[]", "a box of dimension >= 1"));
    }
    for &(lo, hi) in domain {
        if !(lo.is_finite() && hi.is_finite() && lo < hi) {
            return Err(Error::invalid(
                "domain",
                format!("[{lo}, {hi}]"),
                "finite intervals with lo < hi",
            ));
        }
    }
    Ok(())
}

fn check_theta0(theta0: &[f64], domain: &[(f64, f64)]) -> Result<()> {
    let inside = theta0.len() == domain.len()
        && theta0
            .iter()
            .zip(domain)
            .all(|(t, &(lo, hi))| *t >= lo && *t <= hi);
    if inside {
        Ok(())
    } else {
        Err(Error::invalid(
            "theta0",
            format!("{theta0:?}"),
            format!("a point of the workload's box {domain:?} (native units)"),
        ))
    }
}

// ---------------------------------------------------------------------------------------------
// The loop

/// Diagnostics of one iteration. **Not private**: for simulations and plots only.
#[derive(Clone, Debug, PartialEq)]
pub struct Iteration {
    /// 0-based iteration index.
    pub t: usize,
    /// θ_t, where the gradient was estimated (native units).
    pub theta: Vec<f64>,
    /// θ_t in the unit box.
    pub theta_unit: Vec<f64>,
    /// Points evaluated at this iteration.
    pub batch_size: usize,
    /// Points evaluated so far, this iteration included.
    pub evaluations: u64,
    /// Tr Σ_∇(θ_t | design used), with the acquisition's noise variance (0 for exact
    /// gradients).
    pub posterior_trace: f64,
    /// The clipped mean gradient g_t (before noise).
    pub g: Vec<f64>,
    /// ‖g_t‖.
    pub g_norm: f64,
    /// ‖s·w_t‖, the norm of the added noise.
    pub noise_norm: f64,
    /// The fraction of users whose gradient was clipped.
    pub frac_clipped: f64,
    /// Against the exact per-user gradients, when the workload has them (non-private
    /// diagnostics, spec 004 §4.3; they draw nothing).
    pub exact: Option<GradientCheck>,
}

/// g_t against the exact gradients at θ_t: ḡ = (1/n)Σ_i Π_B(∇L(θ_t, x_i)), ∇f = (1/n)Σ_i ∇L.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GradientCheck {
    /// ‖g_t − ḡ‖: the surrogate's error.
    pub bias_norm: f64,
    /// ‖ḡ − ∇f‖: what clipping costs.
    pub clip_bias_norm: f64,
    /// ‖∇f(θ_t)‖.
    pub grad_true_norm: f64,
}

impl GradientCheck {
    /// The check of `g` against `exact` (d × n, one column per user, native units).
    pub fn of(g: &Array1<f64>, exact: &Array2<f64>, clip: f64) -> Self {
        let users = exact.t();
        let (clipped, _) = crate::accounting::clipped_mean::clipped_mean(users, clip);
        let mean = users.mean_axis(Axis(0)).expect("at least one user");
        let norm = |v: Array1<f64>| v.dot(&v).sqrt();
        GradientCheck {
            bias_norm: norm(g - &clipped),
            clip_bias_norm: norm(&clipped - &mean),
            grad_true_norm: norm(mean),
        }
    }
}

/// What a run releases: the path, and what it cost.
#[derive(Clone, Debug, PartialEq)]
pub struct Path {
    /// θ_0..θ_T in native units (θ_0 is data-independent; θ_1..θ_T are the μ-GDP release).
    pub thetas: Vec<Vec<f64>>,
    /// θ_T in the unit box.
    pub final_unit: Vec<f64>,
    /// Points evaluated (DP-GIBO) or gradient evaluations (DP-GD).
    pub evaluations: u64,
    /// The noise std s of each released gradient.
    pub noise_std: f64,
}

fn to_unit(theta: ArrayView1<f64>, domain: &[(f64, f64)]) -> Hyper {
    theta
        .iter()
        .zip(domain)
        .map(|(t, &(lo, hi))| ((t - lo) / (hi - lo)).clamp(0.0, 1.0))
        .collect()
}

fn initial_theta(theta0: &Option<Vec<f64>>, domain: &[(f64, f64)], seed: u64) -> Array1<f64> {
    match theta0 {
        Some(t) => Array1::from(t.clone()),
        None => {
            let mut rng = stream(seed, &[STREAM_INIT]);
            domain
                .iter()
                .map(|&(lo, hi)| lo + rng.random::<f64>() * (hi - lo))
                .collect()
        }
    }
}

/// One DP-GIBO run (spec 004 §1.8) on `losses`, drawing everything from sub-streams of one
/// value of `rng` (θ_0, evaluations, starting points, privacy noise: each its own stream).
/// `observe` receives each iteration's non-private diagnostics.
pub fn run(
    losses: &dyn PerUserLosses,
    cfg: &DpGiboConfig,
    rng: &mut dyn RngCore,
    observe: &mut dyn FnMut(&Iteration),
) -> Result<Path> {
    let s = GiboSession::gibo(cfg.clone(), losses.domain(), losses.n_users(), rng)?;
    run_session(s, losses, rng, observe)
}

/// Drives a session over `losses`, passing each iteration's diagnostics to `observe`.
fn run_session(
    mut s: GiboSession,
    losses: &dyn PerUserLosses,
    rng: &mut dyn RngCore,
    observe: &mut dyn FnMut(&Iteration),
) -> Result<Path> {
    let evaluator = session::PerUser(losses);
    crate::session::drive_each(&mut s, &evaluator, rng, &mut |s, e| {
        if let Some(it) = s.last_iteration(e) {
            observe(&it)
        }
    })?;
    Ok(s.path())
}

/// Everything DP-GD fixes before it sees data (spec 004 E.4): the same clipping, noise and
/// accounting as DP-GIBO, on the exact per-user gradients.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DpGdConfig {
    pub mu: f64,
    pub steps: usize,
    pub clip: f64,
    pub step_rule: StepRule,
    /// θ_0 in native units; `None`: uniform in the box from the run's own stream.
    pub theta0: Option<Vec<f64>>,
}

/// One DP-GD run: θ_{t+1} = Proj(step(θ_t, mean_i Π_B(∇L(θ_t, x_i)) + s·w_t)), with
/// s = 2B√T/(nμ). Needs [`PerUserLosses::user_gradients`]. The normalised rule uses unit
/// scales.
pub fn run_gd(
    losses: &dyn PerUserLosses,
    cfg: &DpGdConfig,
    rng: &mut dyn RngCore,
    observe: &mut dyn FnMut(&Iteration),
) -> Result<Path> {
    let s = GiboSession::gd(cfg.clone(), losses.domain(), losses.n_users(), rng)?;
    run_session(s, losses, rng, observe)
}

#[cfg(test)]
mod tests;
