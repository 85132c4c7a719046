//! DP-GIBO and DP-GD as ask/tell sessions (issue 39): each step asks for one evaluation
//! (every user's losses at the points chosen around θ_t, or every user's exact gradients at
//! θ_t), and its tell releases ĝ_t and moves θ. The state is plain data: the configuration,
//! θ, the design and the losses seen, AdaGrad's sums, and the positions of the run's streams,
//! so a run resumes from its saved state and draws exactly what an uninterrupted run draws.
//!
//! The streams are those of [`super::run`] always: one value `seed` of the caller's stream,
//! then θ_0, the evaluations, the starting points and the privacy noise each from their own
//! sub-stream of it. The evaluations continue one stream across steps: a trial names it with
//! the word it starts at, and the executor says where the evaluation left it
//! ([`Session::stream_left_at`]). A command evaluates with its own seed instead.

use super::{
    initial_theta, noise_std, release_clipped_mean, select_points, to_unit, DpGdConfig,
    DpGiboConfig, GradientCheck, GradientPosterior, Iteration, Path, Stepper, STREAM_EVALUATIONS,
    STREAM_POINTS, STREAM_PRIVACY,
};
use crate::error::{Error, Result};
use crate::rng::{stream_at, word_position};
use crate::session::{unfinished, Evaluation, Evaluator, Next, Progress, Session, Told};
use crate::session::{Observer, Outcome, TraceRow, MU, NOISE_STD};
use crate::workloads::{Hyper, PerUserLosses};
use ndarray::{concatenate, Array1, Array2, ArrayView1, ArrayView2, Axis};
use rand::RngCore;
use serde::{Deserialize, Serialize};

/// Which method a session runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Method {
    /// DP-GIBO: surrogate gradients from losses at chosen points.
    Gibo(DpGiboConfig),
    /// DP-GD: the exact per-user gradients.
    Gd(DpGdConfig),
}

/// A DP-GIBO or DP-GD run as a state machine.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GiboSession {
    method: Method,
    /// The native box the unit box maps to.
    domain: Vec<(f64, f64)>,
    n_users: usize,
    seed: u64,
    /// s, the noise std of each released gradient.
    noise: f64,
    /// θ_0..θ_t in native units (θ_t is the current iterate).
    thetas: Vec<Vec<f64>>,
    /// AdaGrad's running sum of squared released gradients.
    sum_sq: Vec<f64>,
    /// DP-GIBO's design points so far (native units) and every user's losses at each.
    design: Vec<Vec<f64>>,
    losses: Vec<Vec<f64>>,
    evaluations: u64,
    /// Words drawn from the points, privacy and evaluation streams.
    points_at: u64,
    privacy_at: u64,
    evaluations_at: u64,
    /// DP-GIBO's step asked for and not yet told: the history rows it keeps and its new points.
    step: Option<PendingStep>,
    progress: Progress,
    /// The last step's diagnostics (not private, not part of the state).
    #[serde(skip)]
    last: Option<Iteration>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct PendingStep {
    kept: Vec<usize>,
    /// b × d, native units.
    points: Vec<Vec<f64>>,
    trace: f64,
}

impl GiboSession {
    /// A DP-GIBO run on `n_users` users' losses over the native box `domain`; its seed is one
    /// draw of `rng`, after every check.
    pub fn gibo(
        cfg: DpGiboConfig,
        domain: &[(f64, f64)],
        n_users: usize,
        rng: &mut dyn RngCore,
    ) -> Result<Self> {
        cfg.validate(domain)?;
        let noise = noise_std(cfg.clip, cfg.steps, check_users(n_users)?, cfg.mu);
        let theta0 = cfg.theta0.clone();
        Ok(Self::start(
            Method::Gibo(cfg),
            theta0,
            domain,
            n_users,
            noise,
            rng,
        ))
    }

    /// A DP-GD run, as [`GiboSession::gibo`].
    pub fn gd(
        cfg: DpGdConfig,
        domain: &[(f64, f64)],
        n_users: usize,
        rng: &mut dyn RngCore,
    ) -> Result<Self> {
        super::check_common(cfg.mu, cfg.steps, cfg.clip, &cfg.step_rule)?;
        super::check_domain(domain)?;
        if let Some(t0) = &cfg.theta0 {
            super::check_theta0(t0, domain)?;
        }
        let noise = noise_std(cfg.clip, cfg.steps, check_users(n_users)?, cfg.mu);
        let theta0 = cfg.theta0.clone();
        Ok(Self::start(
            Method::Gd(cfg),
            theta0,
            domain,
            n_users,
            noise,
            rng,
        ))
    }

    fn start(
        method: Method,
        theta0: Option<Vec<f64>>,
        domain: &[(f64, f64)],
        n_users: usize,
        noise: f64,
        rng: &mut dyn RngCore,
    ) -> Self {
        let seed = rng.next_u64();
        let theta = initial_theta(&theta0, domain, seed);
        GiboSession {
            method,
            domain: domain.to_vec(),
            n_users,
            seed,
            noise,
            thetas: vec![theta.to_vec()],
            sum_sq: vec![0.0; domain.len()],
            design: Vec::new(),
            losses: Vec::new(),
            evaluations: 0,
            points_at: 0,
            privacy_at: 0,
            evaluations_at: 0,
            step: None,
            progress: Progress::default(),
            last: None,
        }
    }

    fn steps(&self) -> usize {
        match &self.method {
            Method::Gibo(c) => c.steps,
            Method::Gd(c) => c.steps,
        }
    }

    fn mu(&self) -> f64 {
        match &self.method {
            Method::Gibo(c) => c.mu,
            Method::Gd(c) => c.mu,
        }
    }

    fn clip(&self) -> f64 {
        match &self.method {
            Method::Gibo(c) => c.clip,
            Method::Gd(c) => c.clip,
        }
    }

    fn theta(&self) -> Array1<f64> {
        Array1::from(self.thetas.last().expect("θ_0 is always there").clone())
    }

    /// The released path so far (θ_0..θ_t) and what it cost.
    pub fn path(&self) -> Path {
        let theta = self.theta();
        Path {
            final_unit: to_unit(theta.view(), &self.domain),
            thetas: self.thetas.clone(),
            evaluations: self.evaluations,
            noise_std: self.noise,
        }
    }

    /// The last step's diagnostics, with the exact-gradient check where `evaluator` knows
    /// the exact gradients (DP-GD's are the ones it used).
    pub fn last_iteration(&self, evaluator: &dyn Evaluator) -> Option<Iteration> {
        let mut it = self.last.clone()?;
        if it.exact.is_none() {
            let (d, n) = (self.domain.len(), self.n_users);
            it.exact = evaluator
                .exact_user_gradients(&it.theta_unit)
                .filter(|e| e.dim() == (d, n))
                .map(|e| GradientCheck::of(&Array1::from(it.g.clone()), &e, self.clip()));
        }
        Some(it)
    }

    /// Releases ĝ at θ from the per-user gradients (n × d) and moves θ.
    fn release(
        &mut self,
        user_gradients: ArrayView2<f64>,
        points: usize,
        trace: f64,
    ) -> Result<Array1<f64>> {
        if user_gradients.iter().any(|v| !v.is_finite()) {
            return Err(Error::Numerical(
                "a per-user gradient is not finite (non-finite losses or an ill-conditioned \
                 design)"
                    .into(),
            ));
        }
        let mut rng = stream_at(self.seed, STREAM_PRIVACY, self.privacy_at);
        let r = release_clipped_mean(user_gradients, self.clip(), self.noise, &mut rng);
        self.privacy_at = word_position(&rng)?;
        if r.released.iter().any(|v| !v.is_finite()) {
            return Err(Error::Numerical(
                "the released gradient is not finite".into(),
            ));
        }
        let (rule, scales) = match &self.method {
            Method::Gibo(c) => (c.step_rule, c.kernel.lengthscales().to_vec()),
            Method::Gd(c) => (c.step_rule, vec![1.0; self.domain.len()]),
        };
        let mut stepper = Stepper::new(rule, &scales);
        stepper.sum_sq = Array1::from(self.sum_sq.clone());
        let theta = self.theta();
        let next = stepper.step(&theta, &r.released, &self.domain);
        self.sum_sq = stepper.sum_sq.to_vec();
        self.last = Some(Iteration {
            t: self.thetas.len() - 1,
            theta: theta.to_vec(),
            theta_unit: to_unit(theta.view(), &self.domain),
            batch_size: points,
            evaluations: self.evaluations,
            posterior_trace: trace,
            g_norm: r.clipped_mean.dot(&r.clipped_mean).sqrt(),
            g: r.clipped_mean.to_vec(),
            noise_norm: self.noise * r.standard_noise.dot(&r.standard_noise).sqrt(),
            frac_clipped: r.frac_clipped,
            exact: None,
        });
        self.thetas.push(next.to_vec());
        Ok(r.clipped_mean)
    }
}

fn check_users(n: usize) -> Result<usize> {
    if n == 0 {
        return Err(Error::invalid("n_users", 0, "at least 1"));
    }
    Ok(n)
}

/// The users' gradients (n × d) from their losses (n × N) and the surrogate's weights
/// (N × d), where a gradient too large for doubles (from a huge finite loss) is replaced by its
/// clipped value, the same direction at norm `clip`: the gradient is linear in the losses, so
/// the direction is that of the losses scaled down. No finite loss can then abort a step; only
/// weights that are not finite, a function of the public design alone, can.
fn representable(
    mut grads: Array2<f64>,
    losses: ArrayView2<f64>,
    weights: ArrayView2<f64>,
    clip: f64,
) -> Result<Array2<f64>> {
    let largest = |v: ArrayView1<f64>| v.iter().fold(0.0_f64, |m, x| m.max(x.abs()));
    for (mut g, y) in grads.rows_mut().into_iter().zip(losses.rows()) {
        if g.dot(&g).is_finite() {
            continue;
        }
        let v = (&y / largest(y)).dot(&weights);
        if v.iter().any(|x| !x.is_finite()) {
            return Err(Error::Numerical(
                "the surrogate's gradient weights are not finite (an ill-conditioned design: \
                 a larger lengthscale or evaluation_sd)"
                    .into(),
            ));
        }
        let m = largest(v.view());
        if m > 0.0 {
            let norm = m * (&v / m).dot(&(&v / m)).sqrt();
            g.assign(&(&v * (clip / norm)));
        } else {
            g.fill(0.0);
        }
    }
    Ok(grads)
}

/// Rows of equal length as a matrix (`cols` columns, also when there are no rows).
fn matrix(rows: &[Vec<f64>], cols: usize) -> Array2<f64> {
    Array2::from_shape_fn((rows.len(), cols), |(i, j)| rows[i][j])
}

impl crate::session::SessionKind for GiboSession {
    /// DP-GIBO or DP-GD.
    const KIND: &'static str = "gibo";
    /// The number of evaluations (trials) a run makes, where it is fixed in advance (all of
    /// DP-GD's; DP-GIBO's with a fixed batch, counted in points).
    fn planned_runs(&self) -> Option<u64> {
        match &self.method {
            Method::Gd(c) => Some(c.steps as u64),
            Method::Gibo(c) => match c.batch {
                super::BatchMode::Fixed { b } => Some((c.steps * b) as u64),
                super::BatchMode::Adaptive { .. } => None,
            },
        }
    }
    fn pending(&self) -> &[crate::session::Trial] {
        &self.progress.pending
    }
}

impl Session for GiboSession {
    /// Draws nothing from `rng`: the run's draws come from its own streams.
    fn ask(&mut self, _rng: &mut dyn RngCore) -> Result<Next> {
        if !self.progress.pending.is_empty() {
            return Ok(Next::Wait);
        }
        if self.thetas.len() > self.steps() {
            return Ok(Next::Done);
        }
        let theta = self.theta();
        let unit = to_unit(theta.view(), &self.domain);
        let Method::Gibo(cfg) = &self.method else {
            return Ok(self
                .progress
                .start_with(unit, Evaluation::UserGradients, None));
        };
        let d = self.domain.len();
        let x = matrix(&self.design, d);
        let kept = cfg.history.select(x.view(), theta.view());
        let history = x.select(Axis(0), &kept);
        let mut point_rng = stream_at(self.seed, STREAM_POINTS, self.points_at);
        let sel = select_points(
            &cfg.kernel,
            theta.view(),
            history.view(),
            cfg.batch,
            &cfg.points,
            cfg.noise_sd * cfg.noise_sd,
            &self.domain,
            &mut point_rng,
        )?;
        self.points_at = word_position(&point_rng)?;
        let points: Vec<Hyper> = sel
            .points
            .rows()
            .into_iter()
            .map(|r| to_unit(r, &self.domain))
            .collect();
        self.step = Some(PendingStep {
            kept,
            points: sel.points.rows().into_iter().map(|r| r.to_vec()).collect(),
            trace: sel.trace,
        });
        Ok(self.progress.start_at(
            unit,
            Evaluation::UserLosses { points },
            Some((self.seed, STREAM_EVALUATIONS)),
            self.evaluations_at,
        ))
    }

    fn stream_left_at(&mut self, index: u64, position: u64) {
        if self.progress.pending_trial(index).is_ok() && self.step.is_some() {
            self.evaluations_at = position;
        }
    }

    fn tell(&mut self, index: u64, told: Told) -> Result<()> {
        let trial = self.progress.pending_trial(index)?.clone();
        let (d, n) = (self.domain.len(), self.n_users);
        match (&self.method, &trial.evaluation) {
            (Method::Gibo(cfg), Evaluation::UserLosses { points }) => {
                let cfg = cfg.clone();
                let b = points.len();
                let mut yz = told.clone().matrix("per-user losses", n, b)?;
                if let Some((lo, hi)) = cfg.loss_range {
                    yz.mapv_inplace(|v| v.clamp(lo, hi));
                }
                self.progress.told(index, told)?;
                let step = self.step.take().ok_or_else(|| {
                    Error::Infeasible("DP-GIBO was told losses it did not ask for".into())
                })?;
                let theta = self.theta();
                let (x, y) = (matrix(&self.design, d), matrix(&self.losses, n));
                let (xh, yh) = (x.select(Axis(0), &step.kept), y.select(Axis(0), &step.kept));
                let new = matrix(&step.points, d);
                self.evaluations += b as u64;
                let xt = concatenate(Axis(0), &[xh.view(), new.view()]).expect("d columns");
                let yt = concatenate(Axis(0), &[yh.view(), yz.t()]).expect("n columns");
                self.design.extend(step.points);
                self.losses
                    .extend(yz.columns().into_iter().map(|c| c.to_vec()));
                let post = GradientPosterior::new(
                    &cfg.kernel,
                    theta.view(),
                    xt.view(),
                    cfg.noise_sd * cfg.noise_sd + cfg.mean_jitter,
                )?;
                let grads = representable(
                    post.user_gradients(yt.t()),
                    yt.t(),
                    post.weights(),
                    cfg.clip,
                )?;
                self.release(grads.view(), b, step.trace)?;
            }
            (Method::Gd(_), Evaluation::UserGradients) => {
                let users = told.clone().matrix("per-user gradients", n, d)?;
                self.progress.told(index, told)?;
                self.evaluations += 1;
                let g = self.release(users.view(), 1, 0.0)?;
                let clip = self.clip();
                // d × n with a user's gradient contiguous, as workloads give them (the check's
                // sums then run in the same order).
                let grads = users.reversed_axes();
                if let Some(last) = self.last.as_mut() {
                    last.exact = Some(GradientCheck::of(&g, &grads, clip));
                }
            }
            _ => {
                return Err(Error::Infeasible(format!(
                    "told {} where this run asked for none",
                    trial.evaluation.what()
                )))
            }
        }
        Ok(())
    }

    fn finish(&self) -> Result<Outcome> {
        unfinished(&self.progress, self.thetas.len() <= self.steps())?;
        let path = self.path();
        Ok(Outcome {
            chosen: Some(path.final_unit),
            released_score: None,
            runs: path.evaluations,
            diagnostics: vec![(MU, self.mu()), (NOISE_STD, path.noise_std)],
            ..Outcome::default()
        })
    }

    fn observe_last(&self, evaluator: &dyn Evaluator, observer: &mut dyn Observer) {
        if let Some(it) = self.last_iteration(evaluator) {
            observe(observer, &it);
        }
    }
}

/// Reports one DP-GIBO or DP-GD iteration to `observer`.
pub fn observe(observer: &mut dyn Observer, it: &Iteration) {
    let mut values = vec![
        ("t", it.t as f64),
        ("evaluations", it.evaluations as f64),
        ("batch_size", it.batch_size as f64),
        ("posterior_trace", it.posterior_trace),
        ("g_norm", it.g_norm),
        ("noise_norm", it.noise_norm),
        ("frac_clipped", it.frac_clipped),
    ];
    if let Some(c) = it.exact {
        values.extend([
            ("bias_norm", c.bias_norm),
            ("clip_bias_norm", c.clip_bias_norm),
            ("grad_true_norm", c.grad_true_norm),
        ]);
    }
    observer.observe(&TraceRow {
        point: &it.theta_unit,
        values: &values,
    });
}

/// A workload's per-user losses as an evaluator (for [`super::run`] and [`super::run_gd`]).
pub(super) struct PerUser<'a>(pub &'a dyn PerUserLosses);

impl Evaluator for PerUser<'_> {
    fn evaluate(&self, trial: &crate::session::Trial, rng: &mut dyn RngCore) -> Result<Told> {
        let rows = |m: Array2<f64>| m.rows().into_iter().map(|r| r.to_vec()).collect();
        match &trial.evaluation {
            Evaluation::UserLosses { points } => {
                Ok(Told::Matrix(rows(self.0.user_losses(points, rng)?)))
            }
            Evaluation::UserGradients => Ok(Told::Matrix(rows(
                self.0
                    .user_gradients(&trial.hyper)
                    .ok_or_else(|| {
                        Error::missing_capability("DP-GD", "exact per-user gradients", "")
                    })?
                    .reversed_axes(),
            ))),
            other => Err(Error::Infeasible(format!(
                "per-user losses cannot give {}",
                other.what()
            ))),
        }
    }

    fn exact_user_gradients(&self, point: &Hyper) -> Option<Array2<f64>> {
        self.0.user_gradients(point)
    }
}
