//! Stationary kernels with per-dimension lengthscales (ARD) and a signal variance, and their
//! derivatives: in the inputs (for gradient posteriors, DP-GIBO) and in the log
//! hyperparameters (for the marginal-likelihood gradient).
//!
//! Every kernel is k(x, y) = s²·φ(u) with u = Σ_j (x_j − y_j)²/ℓ_j², so all derivatives follow
//! from φ′(u) and φ″(u) by the chain rule:
//! * RBF: φ = e^{−u/2}, φ′ = −φ/2, φ″ = φ/4;
//! * Matérn 3/2 (a = √(3u)): φ = (1 + a)e^{−a}, φ′ = −(3/2)e^{−a}, φ″ = (9/4)e^{−a}/a;
//! * Matérn 5/2 (a = √(5u)): φ = (1 + a + a²/3)e^{−a}, φ′ = −(5/6)(1 + a)e^{−a},
//!   φ″ = (25/12)e^{−a}.

use crate::error::{Error, Range, Result};
use crate::rng::{gamma, normal};
use ndarray::{Array1, Array2, ArrayView1, ArrayView2};
use rand::RngCore;
use rayon::prelude::*;

/// The kernel families.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum KernelFamily {
    Rbf,
    Matern32,
    Matern52,
}

impl KernelFamily {
    const ALL: [KernelFamily; 3] = [
        KernelFamily::Rbf,
        KernelFamily::Matern32,
        KernelFamily::Matern52,
    ];

    /// The name experiment files use (`rbf`, `matern32`, `matern52`).
    pub fn name(self) -> &'static str {
        match self {
            KernelFamily::Rbf => "rbf",
            KernelFamily::Matern32 => "matern32",
            KernelFamily::Matern52 => "matern52",
        }
    }

    /// The family named `s` (as written by [`KernelFamily::name`]).
    pub fn parse(s: &str) -> Result<Self> {
        Self::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| Error::invalid("kernel", s, "rbf, matern32 or matern52"))
    }

    /// φ as a function of the scaled distance r = √u (unit signal variance).
    pub fn value(self, r: f64) -> f64 {
        self.phi(r * r)
    }

    /// (φ(u), φ′(u), φ″(u)). φ″ is +∞ at u = 0 for Matérn 3/2; callers multiply it by terms
    /// of order u, so they use 0 there.
    fn phi(self, u: f64) -> f64 {
        self.phi_derivatives(u).0
    }

    fn phi_derivatives(self, u: f64) -> (f64, f64, f64) {
        match self {
            KernelFamily::Rbf => {
                let p = libm::exp(-0.5 * u);
                (p, -0.5 * p, 0.25 * p)
            }
            KernelFamily::Matern32 => {
                let a = (3.0 * u).sqrt();
                let e = libm::exp(-a);
                let second = if a > 0.0 { 2.25 * e / a } else { 0.0 };
                ((1.0 + a) * e, -1.5 * e, second)
            }
            KernelFamily::Matern52 => {
                let a = (5.0 * u).sqrt();
                let e = libm::exp(-a);
                (
                    (1.0 + a + a * a / 3.0) * e,
                    -5.0 / 6.0 * (1.0 + a) * e,
                    25.0 / 12.0 * e,
                )
            }
        }
    }

    /// One spectral frequency for lengthscale ℓ (random Fourier features): N(0, I/ℓ²) for RBF;
    /// for Matérn ν a multivariate t with 2ν degrees of freedom, z·√(2ν/w)/ℓ with w ~ χ²(2ν).
    pub fn frequency(self, dim: usize, lengthscale: f64, rng: &mut dyn RngCore) -> Vec<f64> {
        let scale = match self {
            KernelFamily::Rbf => 1.0,
            KernelFamily::Matern32 | KernelFamily::Matern52 => {
                let nu = if self == KernelFamily::Matern32 {
                    1.5
                } else {
                    2.5
                };
                let w = 2.0 * gamma(rng, nu);
                (2.0 * nu / w).sqrt()
            }
        };
        (0..dim)
            .map(|_| normal(rng) * scale / lengthscale)
            .collect()
    }
}

/// Matrices with at least this many entries are filled by rayon, one task per row.
const PARALLEL_ENTRIES: usize = 1 << 14;

/// Calls `fill(i, row_i)` for every row of a row-major matrix with `ncols` columns.
fn for_each_row(data: &mut [f64], ncols: usize, fill: impl Fn(usize, &mut [f64]) + Sync) {
    if data.len() >= PARALLEL_ENTRIES {
        data.par_chunks_mut(ncols)
            .enumerate()
            .for_each(|(i, row)| fill(i, row));
    } else {
        data.chunks_mut(ncols)
            .enumerate()
            .for_each(|(i, row)| fill(i, row));
    }
}

/// Points per block in [`fill_kernel_row`]: their u accumulate in registers over the coordinates.
const LANES: usize = 8;

/// row_j = k(u_j) with u_j = Σ_k (x_k − b[k·stride + first + j])², in blocks of [`LANES`].
#[inline(always)]
fn fill_kernel_row(
    x: ArrayView1<f64>,
    b: &[f64],
    stride: usize,
    first: usize,
    row: &mut [f64],
    k: impl Fn(f64) -> f64,
) {
    for (c, out) in row.chunks_mut(LANES).enumerate() {
        let start = first + c * LANES;
        let mut u = [0.0; LANES];
        if out.len() == LANES {
            for (i, xi) in x.iter().enumerate() {
                let bi: &[f64; LANES] = b[i * stride + start..][..LANES].try_into().unwrap();
                for (ul, bl) in u.iter_mut().zip(bi) {
                    let t = xi - bl;
                    *ul += t * t;
                }
            }
        } else {
            for (i, xi) in x.iter().enumerate() {
                for (ul, bl) in u.iter_mut().zip(&b[i * stride + start..][..out.len()]) {
                    let t = xi - bl;
                    *ul += t * t;
                }
            }
        }
        for (o, ul) in out.iter_mut().zip(u) {
            *o = k(ul);
        }
    }
}

/// A kernel: family, lengthscales ℓ_j (one per dimension) and signal variance s².
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Kernel {
    family: KernelFamily,
    lengthscales: Vec<f64>,
    signal_variance: f64,
}

impl Kernel {
    pub fn new(family: KernelFamily, lengthscales: Vec<f64>, signal_variance: f64) -> Result<Self> {
        if lengthscales.is_empty() {
            return Err(Error::invalid(
                "lengthscales",
                "[]",
                "one positive lengthscale per dimension",
            ));
        }
        for &l in &lengthscales {
            Range::Positive.check("lengthscale", l)?;
        }
        Range::Positive.check("signal_variance", signal_variance)?;
        Ok(Kernel {
            family,
            lengthscales,
            signal_variance,
        })
    }

    /// The same lengthscale in every one of `dim` dimensions.
    pub fn isotropic(
        family: KernelFamily,
        dim: usize,
        lengthscale: f64,
        signal_variance: f64,
    ) -> Result<Self> {
        Kernel::new(family, vec![lengthscale; dim], signal_variance)
    }

    pub fn family(&self) -> KernelFamily {
        self.family
    }
    pub fn dim(&self) -> usize {
        self.lengthscales.len()
    }
    pub fn lengthscales(&self) -> &[f64] {
        &self.lengthscales
    }
    pub fn signal_variance(&self) -> f64 {
        self.signal_variance
    }

    fn u(&self, x: ArrayView1<f64>, y: ArrayView1<f64>) -> f64 {
        x.iter()
            .zip(y.iter())
            .zip(&self.lengthscales)
            .map(|((a, b), l)| ((a - b) / l).powi(2))
            .sum()
    }

    /// k(x, y).
    pub fn eval(&self, x: ArrayView1<f64>, y: ArrayView1<f64>) -> f64 {
        self.signal_variance * self.family.phi(self.u(x, y))
    }

    /// The matrix [k(a_i, b_j)] for the rows of `a` and `b` (standard layout). When `a` and
    /// `b` are the same view this is [`Kernel::gram`].
    ///
    /// u is summed from exact differences of the inputs scaled by 1/ℓ (as scikit-learn does),
    /// not by the expansion |a|² + |b|² − 2a·b, which cancels for nearby points: identical
    /// rows give u = 0 exactly. Rows are filled in parallel for large matrices.
    pub fn matrix(&self, a: ArrayView2<f64>, b: ArrayView2<f64>) -> Array2<f64> {
        if a.as_ptr() == b.as_ptr() && a.raw_dim() == b.raw_dim() && a.strides() == b.strides() {
            return self.gram(a);
        }
        let (na, nb) = (a.nrows(), b.nrows());
        let mut out = Array2::zeros((na, nb));
        if na == 0 || nb == 0 {
            return out;
        }
        let (a_s, b_t) = (self.scaled(a), self.scaled_t(b));
        let fill = |i: usize, row: &mut [f64]| self.fill_row(a_s.row(i), &b_t, nb, 0, row);
        for_each_row(out.as_slice_mut().expect("standard layout"), nb, fill);
        out
    }

    /// The symmetric matrix [k(a_i, a_j)] (standard layout): the triangle of
    /// [`Kernel::gram_lower`], mirrored.
    pub fn gram(&self, a: ArrayView2<f64>) -> Array2<f64> {
        let mut out = self.gram_lower(a).reversed_axes();
        for i in 1..out.nrows() {
            for j in 0..i {
                out[[i, j]] = out[[j, i]];
            }
        }
        out
    }

    /// The lower triangle of [k(a_i, a_j)] (diagonal included, exactly s²·φ(0) = s²) in
    /// column-major layout, zeros above it: what a Cholesky factorisation reads. Each column
    /// is computed once, as a contiguous row of the transpose.
    pub(crate) fn gram_lower(&self, a: ArrayView2<f64>) -> Array2<f64> {
        let n = a.nrows();
        let mut out = Array2::zeros((n, n));
        if n == 0 {
            return out.reversed_axes();
        }
        let (a_s, a_t) = (self.scaled(a), self.scaled_t(a));
        let fill = |i: usize, row: &mut [f64]| {
            self.fill_row(a_s.row(i), &a_t, n, i, &mut row[i..]);
            row[i] = self.signal_variance;
        };
        for_each_row(out.as_slice_mut().expect("standard layout"), n, fill);
        out.reversed_axes()
    }

    /// The rows of `a` divided by the lengthscales.
    fn scaled(&self, a: ArrayView2<f64>) -> Array2<f64> {
        let mut out = a.to_owned();
        for (mut col, l) in out.columns_mut().into_iter().zip(&self.lengthscales) {
            col.mapv_inplace(|v| v / l);
        }
        out
    }

    /// The rows of `a` divided by the lengthscales, coordinate by coordinate: entry
    /// `k·n + j` is coordinate k of point j.
    fn scaled_t(&self, a: ArrayView2<f64>) -> Vec<f64> {
        let mut out = Vec::with_capacity(a.len());
        for (col, l) in a.columns().into_iter().zip(&self.lengthscales) {
            out.extend(col.iter().map(|v| v / l));
        }
        out
    }

    /// row_j = s²·φ(Σ_k (x_k − b_{k, first + j})²) for a scaled point `x` and scaled points
    /// `b` stored coordinate by coordinate (`b[k·stride + j]`, see [`Kernel::scaled_t`]).
    fn fill_row(
        &self,
        x: ArrayView1<f64>,
        b: &[f64],
        stride: usize,
        first: usize,
        row: &mut [f64],
    ) {
        let s2 = self.signal_variance;
        match self.family {
            KernelFamily::Rbf => {
                fill_kernel_row(x, b, stride, first, row, |u| s2 * libm::exp(-0.5 * u))
            }
            KernelFamily::Matern32 => fill_kernel_row(x, b, stride, first, row, |u| {
                let a = (3.0 * u).sqrt();
                s2 * ((1.0 + a) * libm::exp(-a))
            }),
            KernelFamily::Matern52 => fill_kernel_row(x, b, stride, first, row, |u| {
                let a = (5.0 * u).sqrt();
                s2 * ((1.0 + a + a * a / 3.0) * libm::exp(-a))
            }),
        }
    }

    /// ∂k(x, y)/∂x.
    pub fn grad_x(&self, x: ArrayView1<f64>, y: ArrayView1<f64>) -> Array1<f64> {
        let (_, d1, _) = self.family.phi_derivatives(self.u(x, y));
        Array1::from_shape_fn(self.dim(), |j| {
            self.signal_variance * d1 * 2.0 * (x[j] - y[j]) / self.lengthscales[j].powi(2)
        })
    }

    /// ∂²k(x, y)/∂x_i∂y_j: the covariance of ∂f/∂x_i(x) and ∂f/∂y_j(y).
    pub fn cross_hessian(&self, x: ArrayView1<f64>, y: ArrayView1<f64>) -> Array2<f64> {
        let (_, d1, d2) = self.family.phi_derivatives(self.u(x, y));
        let l2: Vec<f64> = self.lengthscales.iter().map(|l| l * l).collect();
        Array2::from_shape_fn((self.dim(), self.dim()), |(i, j)| {
            let (gi, gj) = (2.0 * (x[i] - y[i]) / l2[i], 2.0 * (x[j] - y[j]) / l2[j]);
            let diag = if i == j { -2.0 * d1 / l2[i] } else { 0.0 };
            let cross = if gi == 0.0 || gj == 0.0 {
                0.0
            } else {
                -d2 * gi * gj
            };
            self.signal_variance * (cross + diag)
        })
    }

    /// ∂k(x, y)/∂θ for θ = (ln ℓ_1, …, ln ℓ_d, ln s²).
    pub fn grad_log_params(&self, x: ArrayView1<f64>, y: ArrayView1<f64>) -> Array1<f64> {
        let mut grad = Array1::zeros(self.dim() + 1);
        self.for_each_grad_log_param(x, y, |j, g| grad[j] = g);
        grad
    }

    /// Calls `f(j, ∂k/∂θ_j)` for each log parameter, as [`Kernel::grad_log_params`] returns
    /// them, without allocating (the marginal likelihood's gradient visits n² pairs).
    pub fn for_each_grad_log_param(
        &self,
        x: ArrayView1<f64>,
        y: ArrayView1<f64>,
        mut f: impl FnMut(usize, f64),
    ) {
        let (p, d1, _) = self.family.phi_derivatives(self.u(x, y));
        let d = self.dim();
        for j in 0..d {
            f(
                j,
                self.signal_variance * d1 * (-2.0) * ((x[j] - y[j]) / self.lengthscales[j]).powi(2),
            );
        }
        f(d, self.signal_variance * p);
    }

    /// The log hyperparameters (ln ℓ_1, …, ln ℓ_d, ln s²).
    pub fn log_params(&self) -> Vec<f64> {
        self.lengthscales
            .iter()
            .map(|l| libm::log(*l))
            .chain([libm::log(self.signal_variance)])
            .collect()
    }

    /// The kernel with log hyperparameters `theta` (as from [`Kernel::log_params`]).
    pub fn with_log_params(&self, theta: &[f64]) -> Result<Self> {
        if theta.len() != self.dim() + 1 {
            return Err(Error::invalid(
                "theta",
                theta.len(),
                format!("{} log-parameters", self.dim() + 1),
            ));
        }
        Kernel::new(
            self.family,
            theta[..self.dim()].iter().map(|t| libm::exp(*t)).collect(),
            libm::exp(theta[self.dim()]),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    fn kernels() -> Vec<Kernel> {
        [
            KernelFamily::Rbf,
            KernelFamily::Matern32,
            KernelFamily::Matern52,
        ]
        .into_iter()
        .map(|f| Kernel::new(f, vec![0.3, 0.7, 1.1], 1.7).unwrap())
        .collect()
    }

    /// Central differences of k in x, of ∂k/∂x in y, and of k in the log parameters.
    #[test]
    fn derivatives_match_finite_differences() {
        let (x, y) = (array![0.2, 0.5, 0.9], array![0.35, 0.1, 0.4]);
        let h = 1e-6;
        for k in kernels() {
            let g = k.grad_x(x.view(), y.view());
            let hess = k.cross_hessian(x.view(), y.view());
            for j in 0..3 {
                let (mut xp, mut xm) = (x.clone(), x.clone());
                xp[j] += h;
                xm[j] -= h;
                let fd = (k.eval(xp.view(), y.view()) - k.eval(xm.view(), y.view())) / (2.0 * h);
                assert!(
                    (fd - g[j]).abs() < 1e-7,
                    "{:?} dk/dx{j}: {fd} vs {}",
                    k.family,
                    g[j]
                );
                let (mut yp, mut ym) = (y.clone(), y.clone());
                yp[j] += h;
                ym[j] -= h;
                let fd =
                    (&k.grad_x(x.view(), yp.view()) - &k.grad_x(x.view(), ym.view())) / (2.0 * h);
                for i in 0..3 {
                    assert!(
                        (fd[i] - hess[[i, j]]).abs() < 1e-6,
                        "{:?} d2k/dx{i}dy{j}",
                        k.family
                    );
                }
            }
            let theta = k.log_params();
            let gp = k.grad_log_params(x.view(), y.view());
            for p in 0..theta.len() {
                let (mut tp, mut tm) = (theta.clone(), theta.clone());
                tp[p] += h;
                tm[p] -= h;
                let fd = (k.with_log_params(&tp).unwrap().eval(x.view(), y.view())
                    - k.with_log_params(&tm).unwrap().eval(x.view(), y.view()))
                    / (2.0 * h);
                assert!((fd - gp[p]).abs() < 1e-7, "{:?} dk/dtheta{p}", k.family);
            }
        }
    }

    /// At x = y the cross Hessian is the gradient's prior covariance s²·(−2φ′(0))/ℓ_j² on the
    /// diagonal: s²/ℓ² (RBF), 3s²/ℓ² (Matérn 3/2), 5s²/(3ℓ²) (Matérn 5/2) — finite, no NaN.
    #[test]
    fn gradient_prior_variance_at_coincident_points() {
        let x = array![0.4, 0.4, 0.4];
        for (k, c) in kernels().into_iter().zip([1.0, 3.0, 5.0 / 3.0]) {
            let h = k.cross_hessian(x.view(), x.view());
            for (j, l) in [0.3, 0.7, 1.1].iter().enumerate() {
                assert!(
                    (h[[j, j]] - 1.7 * c / (l * l)).abs() < 1e-12,
                    "{:?}",
                    k.family
                );
            }
            assert_eq!(h[[0, 1]], 0.0);
        }
    }

    #[test]
    fn invalid_kernels_are_rejected() {
        assert!(Kernel::new(KernelFamily::Rbf, vec![], 1.0).is_err());
        assert!(Kernel::new(KernelFamily::Rbf, vec![0.0], 1.0).is_err());
        assert!(Kernel::new(KernelFamily::Rbf, vec![1.0], f64::NAN).is_err());
        assert!(KernelFamily::parse("linear").is_err());
    }
}
