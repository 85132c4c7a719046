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
//! The optimiser is [`crate::numeric::lbfgs::minimize_bounded`] (projected L-BFGS with a
//! strong-Wolfe line search).
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

/// The stream tag for the restart points ("gfit").
pub const FIT_STREAM: u64 = 0x6766_6974;

pub use crate::numeric::lbfgs::{
    minimize, minimize_bounded, LbfgsOptions, LbfgsResult, Termination,
};

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
        let ln = |(lo, hi): (f64, f64)| (libm::log(lo), libm::log(hi));
        std::iter::repeat_n(ln(self.lengthscale), dim)
            .chain([ln(self.signal_variance), ln(self.noise_variance)])
            .collect()
    }
}

/// A full set of GP hyperparameters.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
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
            .map(|v| libm::log(*v))
            .collect()
    }

    /// The inverse of [`Hyperparameters::log_params`] (θ must hold at least 3 values).
    pub fn from_log_params(theta: &[f64]) -> Self {
        let d = theta.len() - 2;
        Hyperparameters {
            lengthscales: theta[..d].iter().map(|t| libm::exp(*t)).collect(),
            signal_variance: libm::exp(theta[d]),
            noise_variance: libm::exp(theta[d + 1]),
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
            .map(|i| libm::pow(10f64, 2.0 * i as f64 / (p - 1) as f64))
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
        let log_barrier = |x: &[f64]| (-libm::log(x[0]) + x[0], vec![-1.0 / x[0] + 1.0]);
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
