//! The exact GP posterior by Cholesky factorisation of K + σ²I (triangular solves, never an
//! explicit inverse), with jitter escalation for nearly singular matrices (the policy of
//! [`super::cholesky`]), one-observation updates that extend the factor instead of
//! refactorising, the log marginal likelihood and its gradient, the posterior of the gradient
//! ∇f (one user's [`GradientPosterior`]), and sampling.

use super::cholesky::{
    cholesky_with_jitter, lapack_error as linalg, solve_triangular, to_f, zeros_f, Factor, Jitter,
};
use super::gradient::GradientPosterior;
use super::kernel::Kernel;
use crate::error::{Error, Range, Result};
use crate::rng::normal;
use ndarray::{Array1, Array2, ArrayView1, ArrayView2, ShapeBuilder};
use ndarray_linalg::{CholeskyFactorized, SolveC, UPLO};
use rand::RngCore;

/// The posterior's jitter: none at first, then escalating, relative to the signal variance
/// (0, then 1e-10, 1e-9, …, 1e-4); beyond that the matrix is reported as not positive definite.
const JITTER: Jitter = Jitter::escalating(0.0);
/// The sampler's jitter on the posterior covariance: 1e-12, then escalating (relative to the
/// signal variance).
const SAMPLE_JITTER: Jitter = Jitter::escalating(1e-12);

/// A GP conditioned on observations (x_i, y_i) with Gaussian noise variance σ², prior mean 0.
#[derive(Clone, Debug)]
pub struct Posterior {
    kernel: Kernel,
    noise_variance: f64,
    x: Array2<f64>,
    y: Array1<f64>,
    /// Lower Cholesky factor of K + (σ² + jitter)I, column-major (Fortran layout) so LAPACK
    /// uses it without a transposed copy.
    chol: Array2<f64>,
    /// (K + (σ² + jitter)I)^{-1} y.
    alpha: Array1<f64>,
    jitter: f64,
}

impl Posterior {
    /// The prior (no observations).
    pub fn prior(kernel: Kernel, noise_variance: f64) -> Result<Self> {
        let d = kernel.dim();
        Posterior::fit(
            kernel,
            noise_variance,
            Array2::zeros((0, d)),
            Array1::zeros(0),
        )
    }

    /// Conditions on the rows of `x` (n × d) and `y` (n).
    pub fn fit(
        kernel: Kernel,
        noise_variance: f64,
        x: Array2<f64>,
        y: Array1<f64>,
    ) -> Result<Self> {
        Range::NonNegative.check("noise_variance", noise_variance)?;
        if x.ncols() != kernel.dim() {
            return Err(Error::invalid(
                "x",
                format!("{} columns", x.ncols()),
                format!("{} columns (the kernel's dimension)", kernel.dim()),
            ));
        }
        if x.nrows() != y.len() {
            return Err(Error::invalid(
                "y",
                format!("{} values", y.len()),
                format!("{} values (one per row of x)", x.nrows()),
            ));
        }
        if let Some(v) = x.iter().chain(y.iter()).find(|v| !v.is_finite()) {
            return Err(Error::invalid("observations", v, "finite numbers"));
        }
        if x.nrows() == 0 {
            let d = kernel.dim();
            return Ok(Posterior {
                kernel,
                noise_variance,
                x: Array2::zeros((0, d)),
                y,
                chol: Array2::zeros((0, 0).f()),
                alpha: Array1::zeros(0),
                jitter: 0.0,
            });
        }
        let n = x.nrows();
        let factor = cholesky_with_jitter(JITTER, kernel.signal_variance(), || {
            let mut a = kernel.gram_lower(x.view());
            a.diag_mut().mapv_inplace(|v| v + noise_variance);
            a
        });
        let (chol, jitter) = factor.map_err(|e| {
            Error::Numerical(format!(
                "the kernel matrix of {n} points is not positive definite even with jitter \
                 {:e} (duplicate points with zero noise, or a lengthscale far below the point \
                 spacing?)",
                e.jitter
            ))
        })?;
        let mut p = Posterior {
            kernel,
            noise_variance,
            x,
            y,
            chol,
            alpha: Array1::zeros(0),
            jitter,
        };
        p.alpha = p.solve(&p.y)?;
        Ok(p)
    }

    /// (K + σ²I)^{-1} b by two triangular solves (LAPACK potrs on the factor).
    fn solve(&self, b: &Array1<f64>) -> Result<Array1<f64>> {
        if b.is_empty() {
            return Ok(Array1::zeros(0));
        }
        let factor = CholeskyFactorized {
            factor: self.chol.view(),
            uplo: UPLO::Lower,
        };
        factor.solvec(b).map_err(linalg)
    }

    /// L^{-1} B (column-major `b` is solved in place, without copies).
    fn half_solve(&self, b: Array2<f64>) -> Result<Array2<f64>> {
        if self.n() == 0 {
            return Ok(Array2::zeros((0, b.ncols())));
        }
        let mut b = if b.t().is_standard_layout() {
            b
        } else {
            to_f(b.view())
        };
        solve_triangular(&self.chol, UPLO::Lower, &mut b)?;
        Ok(b)
    }

    /// Adds one observation by extending the Cholesky factor (O(n²)); falls back to a fresh
    /// factorisation (with more jitter) when the new pivot is not positive.
    pub fn add(&mut self, x: ArrayView1<f64>, y: f64) -> Result<()> {
        if x.len() != self.kernel.dim() || !y.is_finite() || x.iter().any(|v| !v.is_finite()) {
            return Err(Error::invalid(
                "observation",
                format!("{x} -> {y}"),
                format!(
                    "a finite point of dimension {} and a finite value",
                    self.kernel.dim()
                ),
            ));
        }
        let n = self.n();
        let kx = Array1::from_shape_fn(n, |i| self.kernel.eval(self.x.row(i), x));
        let l = if n == 0 {
            Array1::zeros(0)
        } else {
            let mut l = zeros_f(n, 1);
            l.column_mut(0).assign(&kx);
            solve_triangular(&self.chol, UPLO::Lower, &mut l)?;
            l.column(0).to_owned()
        };
        let pivot = self.kernel.eval(x, x) + self.noise_variance + self.jitter - l.dot(&l);
        let mut xs = self.x.clone();
        xs.push_row(x)
            .map_err(|e| Error::Numerical(e.to_string()))?;
        let mut ys = self.y.to_vec();
        ys.push(y);
        // A NaN or non-positive pivot means the extended matrix is numerically singular.
        let pivot_ok = pivot > 1e-12 * self.kernel.signal_variance();
        if !pivot_ok {
            *self = Posterior::fit(
                self.kernel.clone(),
                self.noise_variance,
                xs,
                Array1::from(ys),
            )?;
            return Ok(());
        }
        // The extended factor, column by column (column-major): each old column gains l_j
        // below it, and the new column is zero above the pivot.
        let mut data = Vec::with_capacity((n + 1) * (n + 1));
        for (col, lj) in self.chol.columns().into_iter().zip(&l) {
            data.extend(col.iter());
            data.push(*lj);
        }
        data.resize(n * (n + 1) + n, 0.0);
        data.push(pivot.sqrt());
        self.chol = Array2::from_shape_vec((n + 1, n + 1).f(), data)
            .map_err(|e| Error::Numerical(e.to_string()))?;
        self.x = xs;
        self.y = Array1::from(ys);
        self.alpha = self.solve(&self.y)?;
        Ok(())
    }

    pub fn n(&self) -> usize {
        self.y.len()
    }
    pub fn kernel(&self) -> &Kernel {
        &self.kernel
    }
    pub fn noise_variance(&self) -> f64 {
        self.noise_variance
    }
    /// The jitter that made the factorisation succeed (0 when none was needed).
    pub fn jitter(&self) -> f64 {
        self.jitter
    }
    pub fn x(&self) -> ArrayView2<'_, f64> {
        self.x.view()
    }

    /// α = (K + (σ² + jitter)I)^{-1} y: the posterior mean is k(x, X)·α.
    pub fn alpha(&self) -> ArrayView1<'_, f64> {
        self.alpha.view()
    }

    /// (K + (σ² + jitter)I)^{-1} b for one right-hand side (two triangular solves).
    pub fn solve_noisy(&self, b: &Array1<f64>) -> Result<Array1<f64>> {
        if b.len() != self.n() {
            return Err(Error::invalid(
                "b",
                format!("{} values", b.len()),
                format!("{} values (one per observation)", self.n()),
            ));
        }
        self.solve(b)
    }

    /// Posterior mean of f at the rows of `xs`, without the variance (which costs a triangular
    /// solve per point).
    pub fn mean(&self, xs: ArrayView2<f64>) -> Array1<f64> {
        self.kernel.matrix(xs, self.x.view()).dot(&self.alpha)
    }

    /// Posterior mean and variance of f at the rows of `xs` (variance clamped at 0).
    pub fn predict(&self, xs: ArrayView2<f64>) -> Result<(Array1<f64>, Array1<f64>)> {
        // K(xs, x) in row-major order is K(x, xs) in column-major order: solved in place.
        let ks_t = self.kernel.matrix(xs, self.x.view());
        let mean = ks_t.dot(&self.alpha);
        let v = self.half_solve(ks_t.reversed_axes())?;
        let var = Array1::from_shape_fn(xs.nrows(), |i| {
            let vi = v.column(i);
            (self.kernel.eval(xs.row(i), xs.row(i)) - vi.dot(&vi)).max(0.0)
        });
        Ok((mean, var))
    }

    /// Posterior mean and full covariance at the rows of `xs`.
    pub fn predict_cov(&self, xs: ArrayView2<f64>) -> Result<(Array1<f64>, Array2<f64>)> {
        let ks_t = self.kernel.matrix(xs, self.x.view());
        let mean = ks_t.dot(&self.alpha);
        let v = self.half_solve(ks_t.reversed_axes())?;
        let mut cov = self.kernel.matrix(xs, xs) - v.t().dot(&v);
        cov.diag_mut().mapv_inplace(|a| a.max(0.0));
        Ok((mean, cov))
    }

    /// ln p(y | x) = −½ yᵀα − Σ ln L_ii − (n/2) ln 2π.
    pub fn log_marginal_likelihood(&self) -> f64 {
        -0.5 * self.y.dot(&self.alpha)
            - self.chol.diag().mapv(libm::log).sum()
            - 0.5 * self.n() as f64 * libm::log(2.0 * std::f64::consts::PI)
    }

    /// ∂ ln p(y | x)/∂θ for θ = (ln ℓ_1, …, ln ℓ_d, ln s², ln σ²):
    /// ½ tr((ααᵀ − (K + σ²I)^{-1}) ∂K/∂θ_p).
    pub fn lml_gradient(&self) -> Result<Array1<f64>> {
        let n = self.n();
        let d = self.kernel.dim();
        let mut grad = Array1::zeros(d + 2);
        if n == 0 {
            return Ok(grad);
        }
        let linv = self.half_solve(Array2::eye(n))?;
        let kinv = linv.t().dot(&linv);
        // W = ααᵀ − K⁻¹ entry by entry, and ∂K/∂θ without allocating per pair: the same
        // arithmetic, in the same order, as summing 0.5·W_ij·dk_p over allocated arrays.
        let w = |i: usize, j: usize| self.alpha[i] * self.alpha[j] - kinv[[i, j]];
        for i in 0..n {
            let xi = self.x.row(i);
            for j in 0..n {
                let half_w = 0.5 * w(i, j);
                self.kernel
                    .for_each_grad_log_param(xi, self.x.row(j), |p, dk| grad[p] += half_w * dk);
            }
            grad[d + 1] += 0.5 * w(i, i) * self.noise_variance;
        }
        Ok(grad)
    }

    /// Posterior mean and covariance of ∇f(x): with J = [∂k(x, x_i)/∂x] (n × d), the
    /// [`GradientPosterior`] of one user, mean Jᵀ(K + σ²I)⁻¹y and covariance
    /// ∂²k(x, x)/∂x∂x′ − (L^{-1}J)ᵀ(L^{-1}J).
    pub fn gradient(&self, x: ArrayView1<f64>) -> Result<(Array1<f64>, Array2<f64>)> {
        let mut j = zeros_f(self.n(), self.kernel.dim());
        for i in 0..self.n() {
            j.row_mut(i).assign(&self.kernel.grad_x(x, self.x.row(i)));
        }
        let factor = Factor::from_lower(self.chol.clone());
        let post = GradientPosterior::from_factor(&factor, j, self.kernel.cross_hessian(x, x))?;
        Ok((post.mean_gradient(self.y.view()), post.covariance()))
    }

    /// One joint draw of f at the rows of `xs` from the posterior (the prior when n = 0).
    pub fn sample(&self, xs: ArrayView2<f64>, rng: &mut dyn RngCore) -> Result<Array1<f64>> {
        let (mean, cov) = self.predict_cov(xs)?;
        let m = mean.len();
        let (l, _) = cholesky_with_jitter(SAMPLE_JITTER, self.kernel.signal_variance(), || {
            to_f(cov.view())
        })
        .map_err(|_| {
            Error::Numerical("the posterior covariance could not be factorised for sampling".into())
        })?;
        let z = Array1::from_shape_fn(m, |_| normal(rng));
        // The product in row-major order, as it always was (the summation order is the layout's).
        Ok(mean + l.as_standard_layout().dot(&z))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gp::KernelFamily;

    /// The gradient without per-pair arrays is the same to the last bit as the sum over
    /// allocated ∂K/∂θ and an allocated W (what fits, and so DPareto's paths, computed before).
    #[test]
    fn lml_gradient_is_bit_identical_to_the_allocating_sum() {
        let kernel = Kernel::new(KernelFamily::Matern52, vec![0.3, 0.8, 1.4], 1.7).unwrap();
        let x = Array2::from_shape_fn((23, 3), |(i, j)| ((i * 7 + j * 3) % 11) as f64 / 11.0);
        let y = Array1::from_shape_fn(23, |i| libm::sin(i as f64 * 0.37));
        let post = Posterior::fit(kernel, 0.013, x, y).unwrap();
        let (n, d) = (post.n(), post.kernel.dim());
        let linv = post.half_solve(Array2::eye(n)).unwrap();
        let kinv = linv.t().dot(&linv);
        let w = Array2::from_shape_fn((n, n), |(i, j)| {
            post.alpha[i] * post.alpha[j] - kinv[[i, j]]
        });
        let mut expected = Array1::<f64>::zeros(d + 2);
        for i in 0..n {
            for j in 0..n {
                let dk = post.kernel.grad_log_params(post.x.row(i), post.x.row(j));
                for p in 0..=d {
                    expected[p] += 0.5 * w[[i, j]] * dk[p];
                }
            }
            expected[d + 1] += 0.5 * w[[i, i]] * post.noise_variance;
        }
        let got = post.lml_gradient().unwrap();
        for (g, e) in got.iter().zip(&expected) {
            assert_eq!(g.to_bits(), e.to_bits(), "{got} vs {expected}");
        }
    }
}
