//! The posterior of the gradient at θ given a design X (spec 004 §1.2), for all users at once.
//! With A(θ, X) = [∂_θ k(θ, x_1) … ∂_θ k(θ, x_N)] (d × N) and K_y = k(X, X) + νI
//! (ν = σ² + jitter), user i's mean gradient is A K_y⁻¹ y_i and the covariance
//! Σ_∇ = P0 − A K_y⁻¹ Aᵀ is the same for every user (it does not depend on y). Everything goes
//! through a Cholesky factor of K_y (triangular solves, never an inverse). The same
//! computation, for one user and any [`super::Kernel`], is [`super::Posterior::gradient`].

use super::cholesky::{cholesky_with_jitter, zeros_f, Factor, Jitter, NotPositiveDefinite};
use super::surrogate::SurrogateKernel;
use crate::error::{Error, Range, Result};
use ndarray::{Array1, Array2, ArrayView1, ArrayView2};

/// The error of a design whose K_y is not numerically positive definite.
pub(crate) fn not_positive_definite(e: NotPositiveDefinite) -> Error {
    let n = e.n;
    Error::Numerical(format!(
        "the {n} × {n} kernel matrix of the design is not numerically positive definite \
         (raise the model noise or the jitter)"
    ))
}

/// The factor of K_y = k(X, X) + νI. DP-GIBO's jitter is part of ν, declared before any data
/// is seen, so the policy is [`Jitter::NONE`]: no escalation.
pub(crate) fn design_factor(
    kernel: &SurrogateKernel,
    x: ArrayView2<f64>,
    nu: f64,
) -> Result<Factor> {
    let (lower, _) = cholesky_with_jitter(Jitter::NONE, 1.0, || noisy_gram(kernel, x, nu))
        .map_err(not_positive_definite)?;
    Ok(Factor::from_lower(lower))
}

/// k(X, X) + νI, column-major.
pub(crate) fn noisy_gram(kernel: &SurrogateKernel, x: ArrayView2<f64>, nu: f64) -> Array2<f64> {
    let n = x.nrows();
    let mut k = zeros_f(n, n);
    kernel.matrix_into(x, x, k.view_mut());
    k.diag_mut().mapv_inplace(|v| v + nu);
    k
}

/// Aᵀ = [∂_θ k(θ, x_m)]_m (N × d), column-major.
pub(crate) fn gradient_rows(
    kernel: &SurrogateKernel,
    theta: ArrayView1<f64>,
    x: ArrayView2<f64>,
) -> Array2<f64> {
    let mut a = zeros_f(x.nrows(), kernel.dim());
    kernel.gradients_at_into(theta, x, a.view_mut());
    a
}

/// The posterior of ∇f(θ) given function values at the rows of a design X.
#[derive(Clone, Debug)]
pub struct GradientPosterior {
    /// L⁻¹Aᵀ (N × d).
    half: Array2<f64>,
    /// K_y⁻¹Aᵀ (N × d).
    weights: Array2<f64>,
    /// P0 (d × d).
    prior: Array2<f64>,
}

impl GradientPosterior {
    /// Conditions on the design `x` (N × d, native units) with K_y = k(X, X) + νI,
    /// ν = `noise_variance` (model σ² plus jitter).
    pub fn new(
        kernel: &SurrogateKernel,
        theta: ArrayView1<f64>,
        x: ArrayView2<f64>,
        noise_variance: f64,
    ) -> Result<Self> {
        Range::NonNegative.check("noise_variance", noise_variance)?;
        let d = kernel.dim();
        if theta.len() != d || x.ncols() != d {
            return Err(Error::invalid(
                "design",
                format!(
                    "θ of length {}, points of length {}",
                    theta.len(),
                    x.ncols()
                ),
                format!("points of the kernel's dimension {d}"),
            ));
        }
        if let Some(v) = x.iter().chain(theta.iter()).find(|v| !v.is_finite()) {
            return Err(Error::invalid("design", v, "finite coordinates"));
        }
        let factor = design_factor(kernel, x, noise_variance)?;
        Self::from_factor(
            &factor,
            gradient_rows(kernel, theta, x),
            kernel.prior_gradient_covariance(theta),
        )
    }

    /// The posterior given the factor L of K_y, the rows Aᵀ (N × d, column-major) and the
    /// prior covariance P0 (d × d) of the gradient.
    pub(crate) fn from_factor(
        factor: &Factor,
        rows: Array2<f64>,
        prior: Array2<f64>,
    ) -> Result<Self> {
        let mut half = rows;
        factor.solve_lower(&mut half)?;
        let mut weights = half.clone();
        factor.solve_upper(&mut weights)?;
        Ok(GradientPosterior {
            half,
            weights,
            prior,
        })
    }

    /// K_y⁻¹Aᵀ (N × d): user i's mean gradient is y_iᵀ times this.
    pub fn weights(&self) -> ArrayView2<'_, f64> {
        self.weights.view()
    }

    /// The mean gradient A K_y⁻¹ y for the values `y` at the design.
    pub fn mean_gradient(&self, y: ArrayView1<f64>) -> Array1<f64> {
        self.weights.t().dot(&y)
    }

    /// Every user's mean gradient at once: row i of the result (n × d) is A K_y⁻¹ y_i for
    /// row i of `losses` (n × N, the users' values at the design).
    pub fn user_gradients(&self, losses: ArrayView2<f64>) -> Array2<f64> {
        losses.dot(&self.weights)
    }

    /// Σ_∇ = P0 − A K_y⁻¹ Aᵀ (d × d).
    pub fn covariance(&self) -> Array2<f64> {
        &self.prior - &self.half.t().dot(&self.half)
    }

    /// Tr Σ_∇ = Tr P0 − ‖L⁻¹Aᵀ‖²_F.
    pub fn trace(&self) -> f64 {
        self.prior.diag().sum() - self.half.iter().map(|v| v * v).sum::<f64>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::{normal, stream};
    use ndarray::{s, Array2};
    use ndarray_linalg::{Eigh, UPLO};
    use rand::Rng;

    fn points(n: usize, d: usize, scale: f64, seed: u64) -> Array2<f64> {
        let mut rng = stream(seed, &[]);
        Array2::from_shape_fn((n, d), |_| scale * normal(&mut rng))
    }

    /// The posterior mean gradient is the gradient (in θ) of the posterior mean
    /// m(θ) = k(θ, X) K_y⁻¹ y: checked by central differences of m.
    #[test]
    fn mean_gradient_is_the_derivative_of_the_posterior_mean() {
        let d = 3;
        let kernel = SurrogateKernel::rbf(vec![0.8, 1.2, 1.0], 1.3).unwrap();
        let x = points(12, d, 1.0, 1);
        let y = Array1::from_shape_fn(12, |i| libm::sin(x[[i, 0]] + x[[i, 1]] * x[[i, 2]]));
        let theta = ndarray::array![0.1, -0.2, 0.3];
        let nu = 1e-4;
        let mean = |t: ArrayView1<f64>| {
            let k = noisy_gram(&kernel, x.view(), nu);
            let alpha = ndarray_linalg::Solve::solve(&*k, &y).unwrap();
            let kt = kernel.matrix(t.insert_axis(ndarray::Axis(0)), x.view());
            kt.row(0).dot(&alpha)
        };
        let post = GradientPosterior::new(&kernel, theta.view(), x.view(), nu).unwrap();
        let g = post.mean_gradient(y.view());
        let h = 1e-6;
        for p in 0..d {
            let (mut a, mut b) = (theta.clone(), theta.clone());
            a[p] += h;
            b[p] -= h;
            let fd = (mean(a.view()) - mean(b.view())) / (2.0 * h);
            assert!(
                (g[p] - fd).abs() < 1e-6 * fd.abs().max(1.0),
                "{p}: {} vs {fd}",
                g[p]
            );
        }
        // All users at once equals one at a time.
        let losses = ndarray::stack![ndarray::Axis(0), y, y.mapv(|v| 2.0 * v - 1.0)];
        let all = post.user_gradients(losses.view());
        for i in 0..2 {
            let one = post.mean_gradient(losses.row(i));
            assert!((&all.row(i) - &one).iter().all(|e| e.abs() < 1e-12));
        }
    }

    /// The trace with ℓ = 1, s² = 1 and no data is d; adding points never increases it, and
    /// Σ_∇ stays positive semi-definite.
    #[test]
    fn trace_decreases_and_covariance_stays_psd() {
        for d in [2, 15] {
            let kernel = SurrogateKernel::rbf(vec![1.0; d], 1.0).unwrap();
            let theta = Array1::zeros(d);
            let empty = Array2::zeros((0, d));
            let prior = GradientPosterior::new(&kernel, theta.view(), empty.view(), 0.0).unwrap();
            assert_eq!(prior.trace(), d as f64);
            let x = points(40, d, 0.4, d as u64);
            for nu in [5e-6, 0.0025] {
                let mut last = prior.trace();
                for n in 1..=40 {
                    let p = GradientPosterior::new(&kernel, theta.view(), x.slice(s![..n, ..]), nu)
                        .unwrap();
                    let tr = p.trace();
                    assert!(tr <= last + 1e-10, "d={d} n={n}: {tr} > {last}");
                    let cov = p.covariance();
                    assert!((cov.diag().sum() - tr).abs() < 1e-9);
                    let (eig, _) = cov.eigh(UPLO::Lower).unwrap();
                    assert!(eig.iter().all(|&e| e >= -1e-8), "d={d} n={n}: {eig}");
                    last = tr;
                }
            }
        }
    }

    /// Spec 004 E.3: with the polynomial kernel in d = 5, 21 generic noiseless points determine
    /// a quadratic exactly, so user i's loss ½‖θ − x_i‖² has surrogate gradient θ − x_i, and
    /// the posterior trace is 0.
    #[test]
    fn polynomial_kernel_recovers_quadratic_gradients_exactly() {
        let d = 5;
        let kernel = SurrogateKernel::polynomial(d).unwrap();
        let design = points(21, d, 0.5, 3);
        let users = points(7, d, 1.0, 4).mapv(|v| v + 1.0);
        let losses = Array2::from_shape_fn((7, 21), |(i, m)| {
            0.5 * (&users.row(i) - &design.row(m)).mapv(|v| v * v).sum()
        });
        let mut rng = stream(5, &[]);
        let theta = Array1::from_shape_fn(d, |_| rng.random::<f64>());
        let post = GradientPosterior::new(&kernel, theta.view(), design.view(), 0.0).unwrap();
        let g = post.user_gradients(losses.view());
        for i in 0..7 {
            let want = &theta - &users.row(i);
            let err = (&g.row(i) - &want)
                .iter()
                .fold(0.0f64, |m, e| m.max(e.abs()));
            assert!(err < 1e-9, "user {i}: error {err}");
        }
        assert!(post.trace().abs() < 1e-8, "trace {}", post.trace());
    }

    #[test]
    fn bad_designs_are_rejected() {
        let kernel = SurrogateKernel::rbf(vec![1.0; 2], 1.0).unwrap();
        let theta = Array1::zeros(2);
        let x = ndarray::array![[0.0, f64::NAN]];
        assert!(GradientPosterior::new(&kernel, theta.view(), x.view(), 0.0).is_err());
        let x = ndarray::array![[0.0, 1.0, 2.0]];
        assert!(GradientPosterior::new(&kernel, theta.view(), x.view(), 0.0).is_err());
        // Duplicate points without noise: not positive definite, a clear error.
        let x = ndarray::array![[0.0, 1.0], [0.0, 1.0]];
        let e = GradientPosterior::new(&kernel, theta.view(), x.view(), 0.0).unwrap_err();
        assert!(e.to_string().contains("positive definite"), "{e}");
    }
}
