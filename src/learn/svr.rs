//! ε-support-vector regression (ε-SVR) with an ARD RBF kernel, trained by SMO as LIBSVM (and
//! so scikit-learn's `SVR`) trains it.
//!
//! # The problem
//!
//! With targets z_i and kernel k, ε-SVR's dual (Chang & Lin, "LIBSVM: a library for support
//! vector machines", 2011, §2.4) has 2l variables (α, α*):
//!
//! ```text
//! min  ½ (α − α*)ᵀ K (α − α*) + ε Σ_i (α_i + α*_i) − Σ_i z_i (α_i − α*_i)
//! s.t. 0 ≤ α_i, α*_i ≤ C,  Σ_i (α_i − α*_i) = 0,
//! ```
//!
//! and the regressor is f(x) = Σ_i β_i k(x_i, x) + b with β = α − α*. In LIBSVM's form
//! (`smo_solver.rs`, shared with the C-SVM of [`super::smo`]) variable i is α_i (label +1,
//! linear term ε − z_i) and variable l + i is α*_i (label −1, linear term ε + z_i), both on
//! training row i; the working-set selection (WSS 2), the stopping rule (maximal KKT violation
//! ≤ `tol`, default 1e-3) and the bias b = −ρ are LIBSVM's. No shrinking (a speed-up of
//! LIBSVM's that leaves the optimum alone).
//!
//! At the solution every training residual r_i = z_i − f(x_i) meets its KKT condition to within
//! `tol`: |r_i| ≤ ε + tol where β_i = 0, |r_i − ε| ≤ tol where 0 < β_i < C, r_i ≥ ε − tol where
//! β_i = C, and the mirror images for β_i < 0.
//!
//! # Kernel
//!
//! k(u, v) = exp(−γ Σ_j ((u_j − v_j)/ℓ_j)²) with per-feature lengthscales ℓ ([`ArdRbf`]): the
//! RBF kernel of scikit-learn's `SVR(gamma=γ)` on inputs divided by ℓ. Kernel matrices are
//! computed as LIBSVM computes them, from squared norms and a matrix product of the scaled
//! inputs, ‖u′‖² + ‖v′‖² − 2 u′·v′ (rounding below 0 clamped to 0; k(x, x) = 1 exactly), which
//! makes a prediction on 9000 rows with 1000 support vectors a fast matrix product.
//!
//! # Accuracy
//!
//! [`Svr::duality_gap`] is P − W ≥ 0, the primal objective ½‖w‖² + C Σ_i max(0, |r_i| − ε) at
//! the returned (w, b) minus the dual objective W (the maximised form of the dual above). The
//! primal is 1-strongly convex in w, so the RKHS distance to the exact optimum w* satisfies
//! ‖w − w*‖ ≤ √(2(P − W)) and, as k(x, x) = 1, every prediction's kernel part Σ_i β_i k(x_i, x)
//! is within √(2(P − W)) of the optimum's.
//!
//! Everything is deterministic: matrix products run on one thread, elementwise work and row
//! chunks in parallel, so results do not depend on the thread count.

use super::smo::MAX_TRAIN_ROWS;
use super::smo_solver::{Dual, Solver};
use crate::error::{Error, Range, Result};
use ndarray::{Array1, Array2, ArrayView1, ArrayView2, Axis, Zip};
use rayon::prelude::*;

/// Rows per block when predicting (keeps the kernel block at 512 × n_support).
const PREDICT_CHUNK: usize = 512;

/// The ARD RBF kernel k(u, v) = exp(−γ Σ_j ((u_j − v_j)/ℓ_j)²).
#[derive(Clone, Debug, PartialEq)]
pub struct ArdRbf {
    gamma: f64,
    lengthscales: Vec<f64>,
}

impl ArdRbf {
    /// γ > 0 and one lengthscale ℓ_j > 0 per feature (at least one), all finite.
    pub fn new(gamma: f64, lengthscales: Vec<f64>) -> Result<Self> {
        Range::Positive.check("gamma", gamma)?;
        if lengthscales.is_empty() {
            return Err(Error::invalid(
                "lengthscales",
                "[]",
                "one lengthscale per feature (at least one)",
            ));
        }
        for &l in &lengthscales {
            Range::Positive.check("lengthscale", l)?;
        }
        Ok(ArdRbf {
            gamma,
            lengthscales,
        })
    }

    /// exp(−γ‖u − v‖²) on `dim` features (every ℓ_j = 1).
    pub fn isotropic(gamma: f64, dim: usize) -> Result<Self> {
        Self::new(gamma, vec![1.0; dim])
    }

    pub fn gamma(&self) -> f64 {
        self.gamma
    }

    pub fn lengthscales(&self) -> &[f64] {
        &self.lengthscales
    }

    /// The number of features.
    pub fn dim(&self) -> usize {
        self.lengthscales.len()
    }

    /// k(a, b) from exact differences (the reference the matrix routines are tested against).
    pub fn eval(&self, a: ArrayView1<f64>, b: ArrayView1<f64>) -> f64 {
        let sq: f64 = a
            .iter()
            .zip(b)
            .zip(&self.lengthscales)
            .map(|((u, v), l)| ((u - v) / l).powi(2))
            .sum();
        libm::exp(-self.gamma * sq)
    }

    /// K_ij = k(a_i, b_j) for the rows of `a` and `b` (each with [`ArdRbf::dim`] columns).
    pub fn matrix(&self, a: ArrayView2<f64>, b: ArrayView2<f64>) -> Result<Array2<f64>> {
        self.check_columns("a", a)?;
        self.check_columns("b", b)?;
        let (a, b) = (Scaled::new(self, a), Scaled::new(self, b));
        Ok(self.cross(&a, &b))
    }

    fn check_columns(&self, name: &'static str, x: ArrayView2<f64>) -> Result<()> {
        if x.ncols() != self.dim() {
            return Err(Error::invalid(
                name,
                format!("{} columns", x.ncols()),
                format!("{} columns (one per lengthscale)", self.dim()),
            ));
        }
        Ok(())
    }

    /// exp(−γ(‖a_i‖² + ‖b_j‖² − 2 a_i·b_j)) on scaled rows.
    fn cross(&self, a: &Scaled, b: &Scaled) -> Array2<f64> {
        let mut k = a.x.dot(&b.x.t());
        let gamma = self.gamma;
        Zip::from(k.rows_mut())
            .and(&a.sq)
            .par_for_each(|mut row, &a_sq| {
                for (v, &b_sq) in row.iter_mut().zip(&b.sq) {
                    let d2 = (a_sq + b_sq - 2.0 * *v).max(0.0);
                    *v = libm::exp(-gamma * d2);
                }
            });
        k
    }
}

/// Rows divided by the lengthscales, with their squared norms.
#[derive(Clone, Debug)]
struct Scaled {
    x: Array2<f64>,
    sq: Array1<f64>,
}

impl Scaled {
    fn new(kernel: &ArdRbf, x: ArrayView2<f64>) -> Self {
        let mut x = x.to_owned();
        for mut row in x.rows_mut() {
            for (v, l) in row.iter_mut().zip(&kernel.lengthscales) {
                *v /= l;
            }
        }
        let sq = x.rows().into_iter().map(|r| r.dot(&r)).collect();
        Scaled { x, sq }
    }

    fn select(&self, rows: &[usize]) -> Self {
        Scaled {
            x: self.x.select(Axis(0), rows),
            sq: rows.iter().map(|&i| self.sq[i]).collect(),
        }
    }
}

/// The training parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SvrParams {
    /// The box constraint C > 0 (the cost of a residual outside the tube).
    pub c: f64,
    /// The half-width ε ≥ 0 of the insensitive tube (scikit-learn's `epsilon`).
    pub epsilon: f64,
    /// Stop when the maximal KKT violation is ≤ tol (> 0).
    pub tol: f64,
    /// The most pair updates before [`fit`] gives up with an error (≥ 1).
    pub max_iter: usize,
}

impl SvrParams {
    /// LIBSVM's and scikit-learn's default stopping tolerance (the C-SVM's).
    pub const DEFAULT_TOL: f64 = super::smo::SvmParams::DEFAULT_TOL;
    /// As for the C-SVM: far more than SMO needs unless the problem is degenerate.
    pub const DEFAULT_MAX_ITER: usize = super::smo::SvmParams::DEFAULT_MAX_ITER;

    /// Parameters with the default `tol` and `max_iter`, checked.
    pub fn new(c: f64, epsilon: f64) -> Result<Self> {
        let p = SvrParams {
            c,
            epsilon,
            tol: Self::DEFAULT_TOL,
            max_iter: Self::DEFAULT_MAX_ITER,
        };
        p.validate()?;
        Ok(p)
    }

    /// Checks every field (C and tol finite and > 0, ε finite and ≥ 0, max_iter ≥ 1).
    pub fn validate(&self) -> Result<()> {
        Range::Positive.check("C", self.c)?;
        Range::NonNegative.check("epsilon", self.epsilon)?;
        Range::Positive.check("tol", self.tol)?;
        if self.max_iter == 0 {
            return Err(Error::invalid("max_iter", 0, "at least 1"));
        }
        Ok(())
    }
}

/// A trained ε-SVR: its support vectors (β_i ≠ 0), their coefficients β_i and the bias.
#[derive(Clone, Debug)]
pub struct Svr {
    kernel: ArdRbf,
    params: SvrParams,
    support: Scaled,
    support_indices: Vec<usize>,
    dual_coef: Array1<f64>,
    bias: f64,
    dual_objective: f64,
    primal_objective: f64,
    iterations: usize,
}

/// Trains an ε-SVR on the rows of `x` with targets `z`.
///
/// Errors: invalid parameters, a target count other than the row count, no rows, more than
/// [`MAX_TRAIN_ROWS`] rows, a column count other than the kernel's, a non-finite feature or
/// target, features so large that the scaled inputs overflow, or no convergence within
/// `params.max_iter` pair updates.
pub fn fit(
    x: ArrayView2<f64>,
    z: ArrayView1<f64>,
    kernel: &ArdRbf,
    params: &SvrParams,
) -> Result<Svr> {
    params.validate()?;
    let n = x.nrows();
    if z.len() != n {
        return Err(Error::invalid(
            "targets",
            format!("{} targets", z.len()),
            format!("{n} targets (one per row of x)"),
        ));
    }
    if n == 0 {
        return Err(Error::invalid("training rows", 0, "at least 1"));
    }
    if n > MAX_TRAIN_ROWS {
        return Err(Error::invalid(
            "training rows",
            n,
            format!("at most {MAX_TRAIN_ROWS} (the Gram matrix is kept in full)"),
        ));
    }
    kernel.check_columns("x", x)?;
    if let Some(v) = x.iter().find(|v| !v.is_finite()) {
        return Err(Error::invalid("features", v, "finite numbers"));
    }
    if let Some(v) = z.iter().find(|v| !v.is_finite()) {
        return Err(Error::invalid("targets", v, "finite numbers"));
    }
    let scaled = Scaled::new(kernel, x);
    if scaled.sq.iter().any(|v| !v.is_finite()) {
        return Err(Error::invalid(
            "features",
            "values whose squares overflow once divided by the lengthscales",
            "smaller features or larger lengthscales (standardise them)",
        ));
    }
    let mut gram = kernel.cross(&scaled, &scaled);
    // Exactly symmetric with a unit diagonal, as the exact kernel is.
    for i in 0..n {
        gram[[i, i]] = 1.0;
        for j in 0..i {
            gram[[i, j]] = gram[[j, i]];
        }
    }
    let eps = params.epsilon;
    let sol = Solver::new(Dual {
        gram: &gram,
        row: (0..n).chain(0..n).collect(),
        y: [1.0, -1.0].iter().flat_map(|&s| vec![s; n]).collect(),
        p: z.iter()
            .map(|&zi| eps - zi)
            .chain(z.iter().map(|&zi| eps + zi))
            .collect(),
        c: params.c,
    })
    .run(params.tol, params.max_iter)?;
    let (alpha, alpha_star) = sol.alpha.split_at(n);
    let beta: Array1<f64> = alpha.iter().zip(alpha_star).map(|(a, s)| a - s).collect();
    let bias = -sol.rho;

    let k_beta = gram.dot(&beta);
    let quad = beta.dot(&k_beta);
    let dual_objective = z.dot(&beta) - eps * sol.alpha.iter().sum::<f64>() - 0.5 * quad;
    let outside: f64 = z
        .iter()
        .zip(&k_beta)
        .map(|(zi, kb)| ((zi - kb - bias).abs() - eps).max(0.0))
        .sum();
    let primal_objective = 0.5 * quad + params.c * outside;

    let support_indices: Vec<usize> = (0..n).filter(|&i| beta[i] != 0.0).collect();
    Ok(Svr {
        kernel: kernel.clone(),
        params: *params,
        support: scaled.select(&support_indices),
        dual_coef: support_indices.iter().map(|&i| beta[i]).collect(),
        support_indices,
        bias,
        dual_objective,
        primal_objective,
        iterations: sol.iterations,
    })
}

impl Svr {
    /// f(x) = Σ_s β_s k(x_s, x) + b for each row of `x`.
    pub fn predict(&self, x: ArrayView2<f64>) -> Result<Array1<f64>> {
        self.kernel.check_columns("x", x)?;
        let mut out = Array1::from_elem(x.nrows(), self.bias);
        if self.support_indices.is_empty() {
            return Ok(out);
        }
        out.axis_chunks_iter_mut(Axis(0), PREDICT_CHUNK)
            .into_par_iter()
            .zip(x.axis_chunks_iter(Axis(0), PREDICT_CHUNK))
            .for_each(|(mut f, rows)| {
                let k = self
                    .kernel
                    .cross(&Scaled::new(&self.kernel, rows), &self.support);
                f += &k.dot(&self.dual_coef);
            });
        Ok(out)
    }

    /// The number of support vectors (β_i ≠ 0).
    pub fn n_support(&self) -> usize {
        self.support_indices.len()
    }

    /// The training rows that are support vectors, increasing (scikit-learn's `support_`).
    pub fn support_indices(&self) -> &[usize] {
        &self.support_indices
    }

    /// β_s = α_s − α*_s for each support vector (scikit-learn's `dual_coef_`).
    pub fn dual_coef(&self) -> ArrayView1<'_, f64> {
        self.dual_coef.view()
    }

    /// The bias b (scikit-learn's `intercept_`).
    pub fn bias(&self) -> f64 {
        self.bias
    }

    /// W = zᵀβ − ε Σ_i (α_i + α*_i) − ½ βᵀKβ at the solution (the maximised dual).
    pub fn dual_objective(&self) -> f64 {
        self.dual_objective
    }

    /// ½ βᵀKβ + C Σ_i max(0, |z_i − f(x_i)| − ε) at the returned (w, b).
    pub fn primal_objective(&self) -> f64 {
        self.primal_objective
    }

    /// P − W (≥ 0 up to rounding): bounds the distance to the optimum (module docs).
    pub fn duality_gap(&self) -> f64 {
        self.primal_objective - self.dual_objective
    }

    /// The number of pair updates SMO made.
    pub fn iterations(&self) -> usize {
        self.iterations
    }

    pub fn kernel(&self) -> &ArdRbf {
        &self.kernel
    }

    pub fn params(&self) -> &SvrParams {
        &self.params
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    /// The matrix route (norms and a product) agrees with exact differences.
    #[test]
    fn kernel_matrix_matches_exact_differences() {
        let k = ArdRbf::new(0.7, vec![0.5, 2.0, 1.3]).unwrap();
        let a = array![[0.1, -1.2, 3.0], [2.0, 0.0, -0.5], [0.1, -1.2, 3.0]];
        let b = array![[0.1, -1.2, 3.0], [-1.0, 1.0, 0.25]];
        let m = k.matrix(a.view(), b.view()).unwrap();
        for i in 0..3 {
            for j in 0..2 {
                let want = k.eval(a.row(i), b.row(j));
                assert!((m[[i, j]] - want).abs() <= 1e-14, "{i} {j}");
            }
        }
        assert!((m[[0, 0]] - 1.0).abs() <= 1e-14 && m[[0, 0]] <= 1.0);
        // exp(−0.7 · ((1.9/0.5)² + (1.2/2)² + (3.5/1.3)²)) by hand.
        let hand = libm::exp(-0.7f64 * (3.8f64.powi(2) + 0.6f64.powi(2) + (3.5f64 / 1.3).powi(2)));
        assert!((k.eval(a.row(0), a.row(1)) - hand).abs() <= 1e-13 * hand);
        assert!(k.matrix(a.view(), array![[1.0]].view()).is_err());
    }
}
