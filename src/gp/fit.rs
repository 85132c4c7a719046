//! A NON-PRIVATE hyperparameter fit: maximum (log) marginal likelihood over the ARD lengthscales
//! ℓ_1..ℓ_d, the signal variance s² and the noise variance σ², by multi-start L-BFGS on the log
//! parameters θ = (ln ℓ_1, …, ln ℓ_d, ln s², ln σ²) (the order of
//! [`Posterior::lml_gradient`]).
//!
//! # Never on private data
//!
//! **This fit is not differentially private.** The fitted kernel is a function of the data it
//! was fitted on, so fitting on private validation data and then running a private tuner with
//! the fitted kernel leaks that data through the kernel, outside any privacy accounting (spec
//! 002, pitfall P2). The private tuners (private GP-UCB, DP-GIBO, DPareto) never call this
//! function: their GP prior is fixed in advance. Use it only on public data — a public proxy
//! task, synthetic objectives, or the non-private baselines.
//!
//! # The optimiser
//!
//! [`minimize_bounded`] is a small self-contained L-BFGS (memory m = 10 by default, two-loop
//! recursion, H₀ = (sᵀy / yᵀy)·I from the newest pair) with a strong-Wolfe line search
//! (bracketing + zoom, Nocedal & Wright Algorithms 3.5 and 3.6, c₁ = 1e-4, c₂ = 0.9, cubic
//! interpolation safeguarded by bisection). Where a trial value is within 1e-10·|f| of the
//! current one — a decrease rounding cannot resolve, near the optimum of an f far from 0 such
//! as a marginal likelihood — the step is judged by its slope alone (Hager & Zhang's
//! approximate Wolfe conditions), so the gradient can still be driven down. On Rosenbrock and
//! on quadratics it takes about as many iterations as scipy's L-BFGS-B.
//!
//! Box bounds are handled by projection ("projected L-BFGS", a light cousin of L-BFGS-B): a
//! coordinate at a bound whose gradient pushes it outwards is held fixed for the iteration
//! (its gradient and direction components are zeroed); the line search runs along the
//! projected path α ↦ P(x + α·d), where P clamps to the box, with the directional derivative
//! taken over the coordinates not clamped at α. When the masked quasi-Newton direction is not
//! a descent direction the memory is dropped and the step falls back to projected steepest
//! descent. Every iterate is therefore feasible, and an optimum on a bound (a noise variance
//! pinned at its floor, say) is reached exactly rather than approached asymptotically.
//!
//! Stopping: the projected gradient ‖P(x − ∇f) − x‖_∞ ≤ `gradient_tolerance`, or a relative
//! decrease (f_k − f_{k+1}) ≤ `relative_tolerance`·max(|f_k|, |f_{k+1}|, 1), or
//! `max_iterations` iterations, or a line search that finds no decrease even along projected
//! steepest descent. A trial point where f or ∇f is not finite counts as f = +∞ (the line
//! search shrinks the step); the result is the best finite point seen, never NaN (the last
//! iterate when no point seen is lower by more than 1e-10·|f|, since it has the smallest
//! gradient).
//!
//! # Bounds and starts
//!
//! The default bounds are scikit-learn's defaults for `ConstantKernel`, `RBF`/`Matern` and
//! `WhiteKernel`: ℓ_j, s² and σ² each in [1e-5, 1e5] (see [`HyperparameterBounds`]). The
//! starts are the initial point ([`FitOptions::initial`], or a data-based guess, clamped into
//! the box) and then `restarts` points drawn log-uniformly in the box from the stream
//! `rng::stream(seed, &[FIT_STREAM])` (all draws made before any optimisation, in the order
//! start by start, parameter by parameter in θ order). The fit with the highest log marginal
//! likelihood wins (the earliest start on ties).

use super::kernel::{Kernel, KernelFamily};
use super::posterior::Posterior;
use crate::error::{Error, Result};
use crate::rng::stream;
use ndarray::{Array1, ArrayView1, ArrayView2};
use rand::Rng;
use std::collections::VecDeque;

/// The stream tag for the restart points ("gfit").
pub const FIT_STREAM: u64 = 0x6766_6974;

// ---------------------------------------------------------------------------------------------
// L-BFGS

/// Sufficient-decrease and curvature constants of the strong Wolfe conditions.
const C1: f64 = 1e-4;
const C2: f64 = 0.9;
/// Relative size of the rounding error assumed in f: a step whose value is within
/// `F_NOISE`·|f₀| of f₀ is judged by its slope alone (the approximate Wolfe conditions of
/// Hager & Zhang 2005), since there a decrease cannot be told from rounding.
const F_NOISE: f64 = 1e-10;

/// Options for [`minimize`] and [`minimize_bounded`].
#[derive(Clone, Debug, PartialEq)]
pub struct LbfgsOptions {
    /// Number of curvature pairs kept (m).
    pub memory: usize,
    /// Maximum number of iterations (accepted steps).
    pub max_iterations: usize,
    /// Stop when the projected gradient's largest component is at most this.
    pub gradient_tolerance: f64,
    /// Stop when a step decreases f by at most this times max(|f_k|, |f_{k+1}|, 1).
    /// 0 disables the test.
    pub relative_tolerance: f64,
}

impl Default for LbfgsOptions {
    /// m = 10, 1000 iterations, projected gradient 1e-5 (scipy's L-BFGS-B `pgtol`), relative
    /// decrease 1e-12 (stricter than scipy's 2.2e-9: marginal likelihoods are cheap at the
    /// sizes this crate fits, and a tighter stop lands closer to the stationary point).
    fn default() -> Self {
        LbfgsOptions {
            memory: 10,
            max_iterations: 1000,
            gradient_tolerance: 1e-5,
            relative_tolerance: 1e-12,
        }
    }
}

/// Why [`minimize_bounded`] stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Termination {
    /// The projected gradient fell below `gradient_tolerance`.
    GradientTolerance,
    /// A step decreased f by less than `relative_tolerance` (relative).
    RelativeChange,
    /// `max_iterations` steps were taken.
    MaxIterations,
    /// No step along the quasi-Newton or the projected steepest-descent direction decreased f
    /// (typically at a minimum, to rounding).
    LineSearchFailed,
    /// f or ∇f is not finite at the (projected) start; nothing was done.
    NonFiniteStart,
}

/// The outcome of [`minimize_bounded`]: the best point seen.
#[derive(Clone, Debug, PartialEq)]
pub struct LbfgsResult {
    /// The best point evaluated (inside the box): the last iterate unless a point seen is
    /// lower by more than rounding (1e-10 relative).
    pub x: Vec<f64>,
    /// f(x); +∞ only when the start was not finite.
    pub value: f64,
    /// ‖P(x − ∇f(x)) − x‖_∞ at `x` (+∞ when the start was not finite).
    pub projected_gradient_norm: f64,
    /// Accepted steps.
    pub iterations: usize,
    /// Calls of f.
    pub evaluations: usize,
    pub termination: Termination,
}

/// Minimises f: Rᵖ → R without bounds; `f` returns (f(x), ∇f(x)). See [`minimize_bounded`].
pub fn minimize<F>(f: F, x0: &[f64], options: &LbfgsOptions) -> Result<LbfgsResult>
where
    F: FnMut(&[f64]) -> (f64, Vec<f64>),
{
    let bounds = vec![(f64::NEG_INFINITY, f64::INFINITY); x0.len()];
    minimize_bounded(f, x0, &bounds, options)
}

/// Minimises f over the box `bounds` (one (lower, upper) per coordinate, infinite ends allowed)
/// by projected L-BFGS from `x0` (clamped into the box first); `f` returns (f(x), ∇f(x)). A
/// value or gradient that is not finite (or a gradient of the wrong length) counts as +∞.
/// Errors only for malformed inputs: lengths that differ, a NaN start (or an infinite one the
/// box does not clamp), NaN or crossed bounds, or tolerances that are negative or NaN.
pub fn minimize_bounded<F>(
    mut f: F,
    x0: &[f64],
    bounds: &[(f64, f64)],
    options: &LbfgsOptions,
) -> Result<LbfgsResult>
where
    F: FnMut(&[f64]) -> (f64, Vec<f64>),
{
    let p = x0.len();
    if p == 0 {
        return Err(Error::invalid("x0", "[]", "at least one coordinate"));
    }
    if bounds.len() != p {
        return Err(Error::invalid(
            "bounds",
            format!("{} intervals", bounds.len()),
            format!("one (lower, upper) per coordinate ({p})"),
        ));
    }
    if let Some(v) = x0.iter().find(|v| v.is_nan()) {
        return Err(Error::invalid("x0", v, "numbers, not NaN"));
    }
    if let Some((lo, hi)) = bounds
        .iter()
        .find(|(lo, hi)| lo.is_nan() || hi.is_nan() || lo > hi)
    {
        return Err(Error::invalid(
            "bounds",
            format!("({lo}, {hi})"),
            "intervals with lower <= upper (no NaN)",
        ));
    }
    for (name, v) in [
        ("gradient_tolerance", options.gradient_tolerance),
        ("relative_tolerance", options.relative_tolerance),
    ] {
        if v.is_nan() || v < 0.0 {
            return Err(Error::invalid(name, v, "a number >= 0"));
        }
    }

    let mut state = Lbfgs {
        f: &mut f,
        bounds,
        evaluations: 0,
        best: None,
    };
    let mut x: Vec<f64> = x0
        .iter()
        .zip(bounds)
        .map(|(v, (lo, hi))| v.clamp(*lo, *hi))
        .collect();
    if let Some(v) = x.iter().find(|v| !v.is_finite()) {
        return Err(Error::invalid(
            "x0",
            v,
            "finite numbers (or infinite ones that a finite bound clamps)",
        ));
    }
    let Some((mut fx, mut g)) = state.eval(&x) else {
        return Ok(LbfgsResult {
            x,
            value: f64::INFINITY,
            projected_gradient_norm: f64::INFINITY,
            iterations: 0,
            evaluations: state.evaluations,
            termination: Termination::NonFiniteStart,
        });
    };

    let mut memory: VecDeque<(Vec<f64>, Vec<f64>, f64)> = VecDeque::new(); // (s, y, 1/sᵀy)
    let mut iterations = 0;
    let termination = loop {
        if projected_gradient_norm(&x, &g, bounds) <= options.gradient_tolerance {
            break Termination::GradientTolerance;
        }
        if iterations >= options.max_iterations {
            break Termination::MaxIterations;
        }
        let mut step = None;
        for attempt in 0..2 {
            if attempt == 1 {
                if memory.is_empty() {
                    break; // steepest descent already failed
                }
                memory.clear();
            }
            let Some(d) = direction(&x, &g, bounds, &memory) else {
                continue;
            };
            let alpha0 = if memory.is_empty() {
                (1.0 / norm2(&d)).min(1.0)
            } else {
                1.0
            };
            if let Some(t) = state.line_search(&x, fx, &g, &d, alpha0) {
                step = Some(t);
                break;
            }
        }
        let Some(trial) = step else {
            break Termination::LineSearchFailed;
        };
        iterations += 1;
        let s: Vec<f64> = trial.x.iter().zip(&x).map(|(a, b)| a - b).collect();
        let y: Vec<f64> = trial.g.iter().zip(&g).map(|(a, b)| a - b).collect();
        let sy = dot(&s, &y);
        if sy > f64::EPSILON * dot(&y, &y) && sy > 0.0 && options.memory > 0 {
            if memory.len() == options.memory {
                memory.pop_front();
            }
            memory.push_back((s, y, 1.0 / sy));
        }
        let decrease = fx - trial.f;
        let scale = fx.abs().max(trial.f.abs()).max(1.0);
        x = trial.x;
        fx = trial.f;
        g = trial.g;
        if options.relative_tolerance > 0.0 && decrease <= options.relative_tolerance * scale {
            break Termination::RelativeChange;
        }
    };
    // The last iterate, unless a point seen earlier is lower by more than rounding (steps
    // accepted by the approximate Wolfe conditions may raise f within rounding, and the last
    // iterate has the smallest gradient).
    let best = state.best.take().expect("the start was finite");
    let (bx, bf, bg) = if best.1 < fx - F_NOISE * fx.abs() {
        best
    } else {
        (x, fx, g)
    };
    Ok(LbfgsResult {
        projected_gradient_norm: projected_gradient_norm(&bx, &bg, bounds),
        x: bx,
        value: bf,
        iterations,
        evaluations: state.evaluations,
        termination,
    })
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn norm2(a: &[f64]) -> f64 {
    dot(a, a).sqrt()
}

/// ‖P(x − g) − x‖_∞.
fn projected_gradient_norm(x: &[f64], g: &[f64], bounds: &[(f64, f64)]) -> f64 {
    x.iter()
        .zip(g)
        .zip(bounds)
        .map(|((xi, gi), (lo, hi))| ((xi - gi).clamp(*lo, *hi) - xi).abs())
        .fold(0.0, f64::max)
}

/// Coordinate i is held at its bound when moving against the gradient would leave the box.
fn held(xi: f64, gi: f64, (lo, hi): (f64, f64)) -> bool {
    (xi <= lo && gi > 0.0) || (xi >= hi && gi < 0.0) || lo == hi
}

/// The two-loop recursion on the gradient with held coordinates zeroed; the direction's held
/// coordinates, and those that would leave the box at once, are zeroed too. None when the
/// result is not a descent direction (or is zero).
fn direction(
    x: &[f64],
    g: &[f64],
    bounds: &[(f64, f64)],
    memory: &VecDeque<(Vec<f64>, Vec<f64>, f64)>,
) -> Option<Vec<f64>> {
    let free: Vec<bool> = (0..x.len()).map(|i| !held(x[i], g[i], bounds[i])).collect();
    let mut q: Vec<f64> = g
        .iter()
        .zip(&free)
        .map(|(gi, f)| if *f { *gi } else { 0.0 })
        .collect();
    let mut alphas = Vec::with_capacity(memory.len());
    for (s, y, rho) in memory.iter().rev() {
        let a = rho * dot(s, &q);
        q.iter_mut().zip(y).for_each(|(qi, yi)| *qi -= a * yi);
        alphas.push(a);
    }
    if let Some((s, y, _)) = memory.back() {
        let gamma = dot(s, y) / dot(y, y);
        q.iter_mut().for_each(|qi| *qi *= gamma);
    }
    for ((s, y, rho), a) in memory.iter().zip(alphas.iter().rev()) {
        let b = rho * dot(y, &q);
        q.iter_mut().zip(s).for_each(|(qi, si)| *qi += (a - b) * si);
    }
    let d: Vec<f64> = (0..x.len())
        .map(|i| {
            let (lo, hi) = bounds[i];
            let di = -q[i];
            let leaves = (x[i] <= lo && di < 0.0) || (x[i] >= hi && di > 0.0);
            if free[i] && !leaves {
                di
            } else {
                0.0
            }
        })
        .collect();
    let slope = dot(&d, g);
    (slope < 0.0 && d.iter().all(|v| v.is_finite())).then_some(d)
}

/// A point on the projected path.
struct Trial {
    alpha: f64,
    x: Vec<f64>,
    f: f64,
    g: Vec<f64>,
    /// φ′(α): ∇f · d over the coordinates not clamped at α (NaN when f = +∞).
    slope: f64,
}

struct Lbfgs<'a, F> {
    f: &'a mut F,
    bounds: &'a [(f64, f64)],
    evaluations: usize,
    best: Option<(Vec<f64>, f64, Vec<f64>)>,
}

impl<F: FnMut(&[f64]) -> (f64, Vec<f64>)> Lbfgs<'_, F> {
    /// f and ∇f at x, or None when either is not finite; keeps the best point seen.
    fn eval(&mut self, x: &[f64]) -> Option<(f64, Vec<f64>)> {
        self.evaluations += 1;
        let (v, g) = (self.f)(x);
        let ok = v.is_finite() && g.len() == x.len() && g.iter().all(|a| a.is_finite());
        if !ok {
            return None;
        }
        if self.best.as_ref().is_none_or(|(_, b, _)| v < *b) {
            self.best = Some((x.to_vec(), v, g.clone()));
        }
        Some((v, g))
    }

    fn trial(&mut self, x: &[f64], d: &[f64], alpha: f64) -> Trial {
        let mut clamped = vec![false; x.len()];
        let xt: Vec<f64> = (0..x.len())
            .map(|i| {
                let (lo, hi) = self.bounds[i];
                let v = x[i] + alpha * d[i];
                clamped[i] = !(v > lo && v < hi) && d[i] != 0.0;
                v.clamp(lo, hi)
            })
            .collect();
        match self.eval(&xt) {
            Some((f, g)) => {
                let slope = (0..x.len())
                    .filter(|&i| !clamped[i])
                    .map(|i| g[i] * d[i])
                    .sum();
                Trial {
                    alpha,
                    x: xt,
                    f,
                    g,
                    slope,
                }
            }
            None => Trial {
                alpha,
                x: xt,
                f: f64::INFINITY,
                g: Vec::new(),
                slope: f64::NAN,
            },
        }
    }

    /// Strong-Wolfe line search along the projected path (N&W Algorithm 3.5). Returns the
    /// accepted point; when the curvature condition cannot be met it still returns the best
    /// point found that satisfies sufficient decrease, and None when there is none.
    fn line_search(
        &mut self,
        x: &[f64],
        f0: f64,
        g0: &[f64],
        d: &[f64],
        alpha0: f64,
    ) -> Option<Trial> {
        const MAX_EXPAND: usize = 40;
        let slope0 = dot(g0, d);
        let start = Trial {
            alpha: 0.0,
            x: x.to_vec(),
            f: f0,
            g: g0.to_vec(),
            slope: slope0,
        };
        let armijo = |t: &Trial| t.f.is_finite() && t.f <= f0 + C1 * t.alpha * slope0 && t.f < f0;
        let mut prev = start;
        let mut alpha = alpha0;
        for i in 0..MAX_EXPAND {
            let t = self.trial(x, d, alpha);
            if approximate_wolfe(&t, f0, slope0) {
                return Some(t);
            }
            if !armijo(&t) || (i > 0 && t.f >= prev.f) {
                return self.zoom(x, f0, slope0, d, prev, t);
            }
            if t.slope.abs() <= -C2 * slope0 {
                return Some(t);
            }
            if t.slope >= 0.0 {
                return self.zoom(x, f0, slope0, d, t, prev);
            }
            alpha = t.alpha * 4.0;
            prev = t;
            if !alpha.is_finite() {
                break;
            }
        }
        // Still decreasing after many expansions (f unbounded below along d?): take the last.
        (prev.alpha > 0.0).then_some(prev)
    }

    /// N&W Algorithm 3.6: `lo` satisfies sufficient decrease and has the lowest f so far;
    /// the minimiser along the path lies between `lo` and `hi`.
    fn zoom(
        &mut self,
        x: &[f64],
        f0: f64,
        slope0: f64,
        d: &[f64],
        mut lo: Trial,
        mut hi: Trial,
    ) -> Option<Trial> {
        for _ in 0..60 {
            let (a, b) = (lo.alpha.min(hi.alpha), lo.alpha.max(hi.alpha));
            let width = b - a;
            if width <= f64::EPSILON * b.max(f64::MIN_POSITIVE) {
                break;
            }
            let guess = interpolate(&lo, &hi);
            let alpha = if guess.is_finite() && guess >= a + 0.1 * width && guess <= b - 0.1 * width
            {
                guess
            } else {
                0.5 * (a + b)
            };
            let t = self.trial(x, d, alpha);
            if approximate_wolfe(&t, f0, slope0) {
                return Some(t);
            }
            if !(t.f.is_finite() && t.f <= f0 + C1 * alpha * slope0) || t.f >= lo.f {
                hi = t;
            } else {
                if t.slope.abs() <= -C2 * slope0 {
                    return Some(t);
                }
                if t.slope * (hi.alpha - lo.alpha) >= 0.0 {
                    hi = lo;
                }
                lo = t;
            }
        }
        (lo.alpha > 0.0 && lo.f < f0).then_some(lo)
    }
}

/// Hager & Zhang's approximate Wolfe conditions, used only where f(α) is within rounding of
/// f₀: C2·φ′(0) ≤ φ′(α) ≤ (1 − 2·C1)·|φ′(0)|. (For a quadratic the right-hand inequality is
/// the Armijo condition; it needs no differences of f.)
fn approximate_wolfe(t: &Trial, f0: f64, slope0: f64) -> bool {
    t.f.is_finite()
        && (t.f - f0).abs() <= F_NOISE * f0.abs()
        && t.slope >= C2 * slope0
        && t.slope <= (1.0 - 2.0 * C1) * -slope0
}

/// The minimiser of the cubic through (α, f, φ′) at `lo` and `hi` (N&W eq. 3.59), or of the
/// quadratic through f(lo), φ′(lo), f(hi) when the cubic has none or hi has no slope; NaN when
/// hi's value is infinite (the caller bisects).
fn interpolate(lo: &Trial, hi: &Trial) -> f64 {
    let (a, fa, ga) = (lo.alpha, lo.f, lo.slope);
    let (b, fb, gb) = (hi.alpha, hi.f, hi.slope);
    if !fb.is_finite() {
        return f64::NAN;
    }
    if gb.is_finite() {
        let d1 = ga + gb - 3.0 * (fa - fb) / (a - b);
        let disc = d1 * d1 - ga * gb;
        if disc >= 0.0 {
            let d2 = (b - a).signum() * disc.sqrt();
            let den = gb - ga + 2.0 * d2;
            if den != 0.0 {
                return b - (b - a) * (gb + d2 - d1) / den;
            }
        }
    }
    let h = b - a;
    let curv = fb - fa - ga * h;
    if curv > 0.0 {
        a - ga * h * h / (2.0 * curv)
    } else {
        f64::NAN
    }
}

// ---------------------------------------------------------------------------------------------
// The marginal-likelihood fit

/// Box bounds on the hyperparameters, as (lower, upper) in natural (not log) units; each
/// lower must be > 0, upper finite, lower ≤ upper (equal ends fix the parameter).
#[derive(Clone, Debug, PartialEq)]
pub struct HyperparameterBounds {
    /// For every lengthscale ℓ_j.
    pub lengthscale: (f64, f64),
    /// For the signal variance s².
    pub signal_variance: (f64, f64),
    /// For the noise variance σ².
    pub noise_variance: (f64, f64),
}

impl Default for HyperparameterBounds {
    /// scikit-learn's defaults: `RBF`/`Matern` length_scale_bounds, `ConstantKernel`
    /// constant_value_bounds and `WhiteKernel` noise_level_bounds are all (1e-5, 1e5). The
    /// noise floor 1e-5 (relative to data of unit scale) also keeps K + σ²I factorisable
    /// without jitter across the box at the sizes this crate fits.
    fn default() -> Self {
        HyperparameterBounds {
            lengthscale: (1e-5, 1e5),
            signal_variance: (1e-5, 1e5),
            noise_variance: (1e-5, 1e5),
        }
    }
}

impl HyperparameterBounds {
    fn validate(&self) -> Result<()> {
        for (name, (lo, hi)) in [
            ("bounds.lengthscale", self.lengthscale),
            ("bounds.signal_variance", self.signal_variance),
            ("bounds.noise_variance", self.noise_variance),
        ] {
            if !(lo > 0.0 && lo <= hi && hi.is_finite()) {
                return Err(Error::invalid(
                    name,
                    format!("({lo}, {hi})"),
                    "(lower, upper) with 0 < lower <= upper < inf",
                ));
            }
        }
        Ok(())
    }

    /// The bounds on θ = (ln ℓ_1, …, ln ℓ_d, ln s², ln σ²).
    pub fn log_bounds(&self, dim: usize) -> Vec<(f64, f64)> {
        let ln = |(lo, hi): (f64, f64)| (lo.ln(), hi.ln());
        std::iter::repeat_n(ln(self.lengthscale), dim)
            .chain([ln(self.signal_variance), ln(self.noise_variance)])
            .collect()
    }
}

/// A full set of GP hyperparameters.
#[derive(Clone, Debug, PartialEq)]
pub struct Hyperparameters {
    pub lengthscales: Vec<f64>,
    pub signal_variance: f64,
    pub noise_variance: f64,
}

impl Hyperparameters {
    /// θ = (ln ℓ_1, …, ln ℓ_d, ln s², ln σ²), the order of [`Posterior::lml_gradient`].
    pub fn log_params(&self) -> Vec<f64> {
        self.lengthscales
            .iter()
            .chain([&self.signal_variance, &self.noise_variance])
            .map(|v| v.ln())
            .collect()
    }

    /// The inverse of [`Hyperparameters::log_params`] (θ must hold at least 3 values).
    pub fn from_log_params(theta: &[f64]) -> Self {
        let d = theta.len() - 2;
        Hyperparameters {
            lengthscales: theta[..d].iter().map(|t| t.exp()).collect(),
            signal_variance: theta[d].exp(),
            noise_variance: theta[d + 1].exp(),
        }
    }
}

/// Options for [`fit_hyperparameters`].
#[derive(Clone, Debug, PartialEq)]
pub struct FitOptions {
    pub bounds: HyperparameterBounds,
    /// The first start; None for a guess from the data: ℓ_j = the standard deviation of
    /// column j of x, s² = mean(y²) (the prior mean is 0, so this is the second moment),
    /// σ² = s²/100 (a value of 0 is replaced by 1), all clamped into the bounds.
    pub initial: Option<Hyperparameters>,
    /// Further starts drawn log-uniformly in the box (scikit-learn's `n_restarts_optimizer`).
    pub restarts: usize,
    /// Seed of the restart stream.
    pub seed: u64,
    pub lbfgs: LbfgsOptions,
}

impl Default for FitOptions {
    /// Default bounds, the data-based first start, 10 restarts, seed 0, default L-BFGS.
    fn default() -> Self {
        FitOptions {
            bounds: HyperparameterBounds::default(),
            initial: None,
            restarts: 10,
            seed: 0,
            lbfgs: LbfgsOptions::default(),
        }
    }
}

/// One start of the multi-start fit.
#[derive(Clone, Debug, PartialEq)]
pub struct StartReport {
    /// The start θ (inside the box).
    pub initial: Vec<f64>,
    /// The log marginal likelihood at the start (−∞ when the kernel matrix could not be
    /// factorised there).
    pub initial_log_marginal_likelihood: f64,
    /// The best θ this start reached.
    pub log_params: Vec<f64>,
    /// Its log marginal likelihood (−∞ only when the start itself was not finite).
    pub log_marginal_likelihood: f64,
    /// The projected gradient ‖P(θ + ∇LML) − θ‖_∞ there.
    pub projected_gradient_norm: f64,
    pub iterations: usize,
    pub evaluations: usize,
    pub termination: Termination,
}

/// The result of [`fit_hyperparameters`]: the best start's hyperparameters.
#[derive(Clone, Debug, PartialEq)]
pub struct FitResult {
    pub kernel: Kernel,
    pub noise_variance: f64,
    pub log_marginal_likelihood: f64,
    /// ‖P(θ + ∇LML) − θ‖_∞ at the optimum (0 at an interior stationary point).
    pub projected_gradient_norm: f64,
    /// The index in `starts` of the winner (0 = the initial point).
    pub best_start: usize,
    pub starts: Vec<StartReport>,
}

impl FitResult {
    /// The fitted hyperparameters.
    pub fn hyperparameters(&self) -> Hyperparameters {
        Hyperparameters {
            lengthscales: self.kernel.lengthscales().to_vec(),
            signal_variance: self.kernel.signal_variance(),
            noise_variance: self.noise_variance,
        }
    }

    /// The fitted θ = (ln ℓ_1, …, ln ℓ_d, ln s², ln σ²).
    pub fn log_params(&self) -> Vec<f64> {
        self.starts[self.best_start].log_params.clone()
    }
}

/// The log marginal likelihood and its gradient in θ = (ln ℓ_1, …, ln ℓ_d, ln s², ln σ²),
/// for the given data (already validated).
pub fn log_marginal_likelihood(
    x: ArrayView2<f64>,
    y: ArrayView1<f64>,
    family: KernelFamily,
    theta: &[f64],
) -> Result<(f64, Array1<f64>)> {
    let d = x.ncols();
    if theta.len() != d + 2 {
        return Err(Error::invalid(
            "theta",
            theta.len(),
            format!("{} log-parameters (d lengthscales, signal, noise)", d + 2),
        ));
    }
    let h = Hyperparameters::from_log_params(theta);
    let kernel = Kernel::new(family, h.lengthscales, h.signal_variance)?;
    let post = Posterior::fit(kernel, h.noise_variance, x.to_owned(), y.to_owned())?;
    Ok((post.log_marginal_likelihood(), post.lml_gradient()?))
}

/// NON-PRIVATE (see the module docs): maximises the GP log marginal likelihood of (x, y) over
/// the ARD lengthscales, the signal variance and the noise variance of a `family` kernel,
/// within `options.bounds`, by L-BFGS from the initial point and `options.restarts` random
/// starts; returns the best. `x` is n × d (one point per row), `y` has n values, n ≥ 1.
pub fn fit_hyperparameters(
    x: ArrayView2<f64>,
    y: ArrayView1<f64>,
    family: KernelFamily,
    options: &FitOptions,
) -> Result<FitResult> {
    let (n, d) = x.dim();
    if n == 0 {
        return Err(Error::invalid("x", "0 rows", "at least one observation"));
    }
    if d == 0 {
        return Err(Error::invalid(
            "x",
            "0 columns",
            "at least one input dimension",
        ));
    }
    if y.len() != n {
        return Err(Error::invalid(
            "y",
            format!("{} values", y.len()),
            format!("{n} values (one per row of x)"),
        ));
    }
    if let Some(v) = x.iter().find(|v| !v.is_finite()) {
        return Err(Error::invalid("x", v, "finite numbers"));
    }
    if let Some(v) = y.iter().find(|v| !v.is_finite()) {
        return Err(Error::invalid("y", v, "finite numbers"));
    }
    options.bounds.validate()?;
    let bounds = options.bounds.log_bounds(d);

    let first = match &options.initial {
        Some(h) => {
            if h.lengthscales.len() != d {
                return Err(Error::invalid(
                    "initial.lengthscales",
                    format!("{} values", h.lengthscales.len()),
                    format!("{d} values (one per column of x)"),
                ));
            }
            for (name, v) in h
                .lengthscales
                .iter()
                .map(|v| ("initial.lengthscales", *v))
                .chain([
                    ("initial.signal_variance", h.signal_variance),
                    ("initial.noise_variance", h.noise_variance),
                ])
            {
                crate::error::Range::Positive.check(name, v)?;
            }
            h.log_params()
        }
        None => data_guess(x, y).log_params(),
    };
    let mut rng = stream(options.seed, &[FIT_STREAM]);
    let mut starts: Vec<Vec<f64>> = vec![first
        .iter()
        .zip(&bounds)
        .map(|(t, (lo, hi))| t.clamp(*lo, *hi))
        .collect()];
    for _ in 0..options.restarts {
        starts.push(
            bounds
                .iter()
                .map(|(lo, hi)| lo + rng.random::<f64>() * (hi - lo))
                .collect(),
        );
    }

    let objective = |theta: &[f64]| match log_marginal_likelihood(x, y, family, theta) {
        Ok((l, g)) => (-l, g.iter().map(|v| -v).collect()),
        Err(_) => (f64::INFINITY, Vec::new()),
    };
    let mut reports = Vec::with_capacity(starts.len());
    for start in starts {
        let initial_lml = -objective(&start).0;
        let r = minimize_bounded(objective, &start, &bounds, &options.lbfgs)?;
        reports.push(StartReport {
            initial: start,
            initial_log_marginal_likelihood: initial_lml,
            log_params: r.x,
            log_marginal_likelihood: -r.value,
            projected_gradient_norm: r.projected_gradient_norm,
            iterations: r.iterations,
            evaluations: r.evaluations,
            termination: r.termination,
        });
    }
    let best_start = (0..reports.len())
        .filter(|&i| reports[i].log_marginal_likelihood.is_finite())
        .fold(None, |best: Option<usize>, i| match best {
            Some(b) if reports[b].log_marginal_likelihood >= reports[i].log_marginal_likelihood => {
                Some(b)
            }
            _ => Some(i),
        })
        .ok_or_else(|| {
            Error::Numerical(format!(
                "no start gave a finite log marginal likelihood for {n} points in {d} dimensions \
                 (the kernel matrix could not be factorised anywhere tried)"
            ))
        })?;
    let best = &reports[best_start];
    let h = Hyperparameters::from_log_params(&best.log_params);
    Ok(FitResult {
        kernel: Kernel::new(family, h.lengthscales, h.signal_variance)?,
        noise_variance: h.noise_variance,
        log_marginal_likelihood: best.log_marginal_likelihood,
        projected_gradient_norm: best.projected_gradient_norm,
        best_start,
        starts: reports,
    })
}

/// The data-based first start (see [`FitOptions::initial`]).
fn data_guess(x: ArrayView2<f64>, y: ArrayView1<f64>) -> Hyperparameters {
    let positive = |v: f64| if v > 0.0 && v.is_finite() { v } else { 1.0 };
    let n = x.nrows() as f64;
    let lengthscales = x
        .columns()
        .into_iter()
        .map(|c| {
            let mean = c.sum() / n;
            positive((c.mapv(|v| (v - mean).powi(2)).sum() / n).sqrt())
        })
        .collect();
    let signal_variance = positive(y.mapv(|v| v * v).sum() / n);
    Hyperparameters {
        lengthscales,
        signal_variance,
        noise_variance: signal_variance / 100.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strict() -> LbfgsOptions {
        LbfgsOptions {
            memory: 10,
            max_iterations: 10_000,
            gradient_tolerance: 1e-10,
            relative_tolerance: 0.0,
        }
    }

    /// Σ_i 100(x_{i+1} − x_i²)² + (1 − x_i)², minimum 0 at (1, …, 1).
    fn rosenbrock(x: &[f64]) -> (f64, Vec<f64>) {
        let mut f = 0.0;
        let mut g = vec![0.0; x.len()];
        for i in 0..x.len() - 1 {
            let a = x[i + 1] - x[i] * x[i];
            let b = 1.0 - x[i];
            f += 100.0 * a * a + b * b;
            g[i] += -400.0 * a * x[i] - 2.0 * b;
            g[i + 1] += 200.0 * a;
        }
        (f, g)
    }

    #[test]
    fn rosenbrock_converges_to_ones() {
        for dim in [2, 10] {
            let x0: Vec<f64> = (0..dim)
                .map(|i| if i % 2 == 0 { -1.2 } else { 1.0 })
                .collect();
            let r = minimize(rosenbrock, &x0, &strict()).unwrap();
            for v in &r.x {
                assert!((v - 1.0).abs() < 1e-6, "dim {dim}: {r:?}");
            }
            assert!(r.value < 1e-12, "dim {dim}: {r:?}");
            assert!(r.iterations < 200, "dim {dim}: {r:?}");
        }
    }

    /// f = ½xᵀAx − bᵀx in 5 dimensions with eigenvalues of A from 1 to 100: L-BFGS reaches a
    /// 1e-10 gradient in ~20 iterations (scipy's L-BFGS-B takes about as many), where steepest
    /// descent (memory 0) needs hundreds. L-BFGS with H₀ = γI is invariant under rotations,
    /// so a diagonal A loses nothing.
    #[test]
    fn convex_quadratic_in_few_iterations() {
        let p = 5;
        let lambda: Vec<f64> = (0..p)
            .map(|i| 10f64.powf(2.0 * i as f64 / (p - 1) as f64))
            .collect();
        let b: Vec<f64> = (0..p).map(|i| 1.0 + i as f64).collect();
        let f = |x: &[f64]| {
            let g: Vec<f64> = (0..p).map(|i| lambda[i] * x[i] - b[i]).collect();
            let v = (0..p)
                .map(|i| 0.5 * lambda[i] * x[i] * x[i] - b[i] * x[i])
                .sum();
            (v, g)
        };
        let r = minimize(f, &vec![0.0; p], &strict()).unwrap();
        for i in 0..p {
            assert!((r.x[i] - b[i] / lambda[i]).abs() <= 1e-10, "{r:?}");
        }
        assert_eq!(r.termination, Termination::GradientTolerance);
        assert!(r.iterations <= 30, "{} iterations", r.iterations);
        let steepest = LbfgsOptions {
            memory: 0,
            ..strict()
        };
        let r0 = minimize(f, &vec![0.0; p], &steepest).unwrap();
        assert!(r0.iterations > 100, "{} iterations", r0.iterations);
    }

    /// With bounds the answer is the projection-constrained minimum: (x − 3)² + (y + 1)² on
    /// [0, 2] × [0, 2] has its minimum at the corner (2, 0), reached exactly.
    #[test]
    fn bounded_minimum_on_the_boundary() {
        let f = |x: &[f64]| {
            (
                (x[0] - 3.0).powi(2) + (x[1] + 1.0).powi(2) + 0.5 * x[0] * x[1],
                vec![
                    2.0 * (x[0] - 3.0) + 0.5 * x[1],
                    2.0 * (x[1] + 1.0) + 0.5 * x[0],
                ],
            )
        };
        let r = minimize_bounded(f, &[0.5, 1.5], &[(0.0, 2.0), (0.0, 2.0)], &strict()).unwrap();
        assert_eq!(r.x, vec![2.0, 0.0], "{r:?}");
        assert_eq!(r.projected_gradient_norm, 0.0);
    }

    /// f is NaN or +∞ beyond a wall the unconstrained step would cross; results stay finite.
    #[test]
    fn non_finite_regions_give_finite_results() {
        // Minimum of (x − 3)² would be at 3, but f is NaN for x > 2.5: the best is near 2.5.
        let nan_wall = |x: &[f64]| {
            if x[0] > 2.5 {
                (f64::NAN, vec![f64::NAN])
            } else {
                ((x[0] - 3.0).powi(2), vec![2.0 * (x[0] - 3.0)])
            }
        };
        let r = minimize(nan_wall, &[0.0], &LbfgsOptions::default()).unwrap();
        assert!(
            r.value.is_finite() && r.x[0].is_finite() && r.x[0] <= 2.5,
            "{r:?}"
        );
        assert!(r.x[0] > 2.4, "{r:?}");
        // −ln x + x has its minimum at 1; ln of a negative is NaN, at 0 it is +∞.
        let log_barrier = |x: &[f64]| (-x[0].ln() + x[0], vec![-1.0 / x[0] + 1.0]);
        let r = minimize(log_barrier, &[20.0], &LbfgsOptions::default()).unwrap();
        assert!((r.x[0] - 1.0).abs() < 1e-4, "{r:?}");
        // +∞ gradient but finite value counts as +∞ too.
        let bad_gradient = |x: &[f64]| {
            let g = if x[0] < 1.0 {
                f64::INFINITY
            } else {
                2.0 * (x[0] - 0.0)
            };
            (x[0] * x[0], vec![g])
        };
        let r = minimize(bad_gradient, &[5.0], &LbfgsOptions::default()).unwrap();
        assert!(
            r.value.is_finite() && r.x[0] >= 1.0 && r.x[0] < 1.1,
            "{r:?}"
        );
        // A start that is not finite: reported, not NaN.
        let r = minimize(|_: &[f64]| (f64::NAN, vec![0.0]), &[1.0], &strict()).unwrap();
        assert_eq!(r.termination, Termination::NonFiniteStart);
        assert_eq!(r.value, f64::INFINITY);
        assert_eq!(r.x, vec![1.0]);
        // Everywhere +∞ except the start: stops at the start.
        let spike = |x: &[f64]| {
            if x[0] == 1.0 {
                (0.0, vec![1.0])
            } else {
                (f64::INFINITY, vec![0.0])
            }
        };
        let r = minimize(spike, &[1.0], &strict()).unwrap();
        assert_eq!(r.termination, Termination::LineSearchFailed);
        assert_eq!((r.x[0], r.value), (1.0, 0.0));
    }

    #[test]
    fn malformed_inputs_are_errors() {
        let o = LbfgsOptions::default();
        assert!(minimize(rosenbrock, &[], &o).is_err());
        assert!(minimize(rosenbrock, &[f64::NAN, 1.0], &o).is_err());
        assert!(minimize(rosenbrock, &[f64::INFINITY, 1.0], &o).is_err());
        let clamped =
            minimize_bounded(rosenbrock, &[f64::INFINITY, 1.0], &[(-2.0, 2.0); 2], &o).unwrap();
        assert!((clamped.x[0] - 1.0).abs() < 1e-3, "{clamped:?}");
        assert!(minimize_bounded(rosenbrock, &[0.0, 0.0], &[(0.0, 1.0)], &o).is_err());
        assert!(minimize_bounded(rosenbrock, &[0.0, 0.0], &[(0.0, 1.0), (2.0, 1.0)], &o).is_err());
        let bad = LbfgsOptions {
            gradient_tolerance: f64::NAN,
            ..o
        };
        assert!(minimize(rosenbrock, &[0.0, 0.0], &bad).is_err());
    }
}
