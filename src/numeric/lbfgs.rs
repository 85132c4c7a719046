//! A small self-contained L-BFGS for smooth objectives on a box (used by the non-private GP
//! hyperparameter fit, `gp::fit`).
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

use crate::error::{Error, Result};
use std::collections::VecDeque;

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
