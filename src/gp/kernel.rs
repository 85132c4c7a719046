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

/// The kernel families.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KernelFamily {
    Rbf,
    Matern32,
    Matern52,
}

impl KernelFamily {
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "rbf" => Ok(KernelFamily::Rbf),
            "matern32" => Ok(KernelFamily::Matern32),
            "matern52" => Ok(KernelFamily::Matern52),
            other => Err(Error::invalid("kernel", other, "rbf, matern32 or matern52")),
        }
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
                let p = (-0.5 * u).exp();
                (p, -0.5 * p, 0.25 * p)
            }
            KernelFamily::Matern32 => {
                let a = (3.0 * u).sqrt();
                let e = (-a).exp();
                let second = if a > 0.0 { 2.25 * e / a } else { 0.0 };
                ((1.0 + a) * e, -1.5 * e, second)
            }
            KernelFamily::Matern52 => {
                let a = (5.0 * u).sqrt();
                let e = (-a).exp();
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

/// A kernel: family, lengthscales ℓ_j (one per dimension) and signal variance s².
#[derive(Clone, Debug, PartialEq)]
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

    /// The matrix [k(a_i, b_j)] for the rows of `a` and `b`.
    pub fn matrix(&self, a: ArrayView2<f64>, b: ArrayView2<f64>) -> Array2<f64> {
        Array2::from_shape_fn((a.nrows(), b.nrows()), |(i, j)| {
            self.eval(a.row(i), b.row(j))
        })
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
        let (p, d1, _) = self.family.phi_derivatives(self.u(x, y));
        let d = self.dim();
        Array1::from_shape_fn(d + 1, |j| {
            if j < d {
                self.signal_variance * d1 * (-2.0) * ((x[j] - y[j]) / self.lengthscales[j]).powi(2)
            } else {
                self.signal_variance * p
            }
        })
    }

    /// The log hyperparameters (ln ℓ_1, …, ln ℓ_d, ln s²).
    pub fn log_params(&self) -> Vec<f64> {
        self.lengthscales
            .iter()
            .map(|l| l.ln())
            .chain([self.signal_variance.ln()])
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
            theta[..self.dim()].iter().map(|t| t.exp()).collect(),
            theta[self.dim()].exp(),
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
