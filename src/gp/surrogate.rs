//! The fixed-hyperparameter kernels of gradient posteriors (DP-GIBO's surrogate, spec 004 §1.2)
//! and the batched derivative blocks the [`super::gradient::GradientPosterior`] and DP-GIBO's
//! acquisition need. Hyperparameters are fixed before any data is seen (they are never fitted:
//! a fit on private losses would leak), in the workload's native units.
//!
//! * ARD RBF: [`super::Kernel`] of family RBF, k(u, v) = s² exp(−½ Σ_j (u_j − v_j)²/ℓ_j²),
//!   Λ = diag(ℓ_j²): ∂_u k = −Λ⁻¹(u − v)k,  ∂_u∂_vᵀ k = k[Λ⁻¹ − Λ⁻¹(u − v)(u − v)ᵀΛ⁻¹],
//!   P0 = s²Λ⁻¹. Its pairwise value and derivatives are [`super::Kernel`]'s.
//! * Polynomial (appendix E.3): k(u, v) = (uᵀv + 1)²:
//!   ∂_u k = 2(uᵀv + 1)v,  ∂_u∂_vᵀ k = 2(uᵀv + 1)I + 2vuᵀ,  P0 = 2(‖θ‖² + 1)I + 2θθᵀ.
//!
//! Here "∂_u∂_vᵀ k" is the d × d matrix with entries ∂²k/∂u_p∂v_q: the covariance of ∂f/∂u_p
//! and ∂f/∂v_q under f ~ GP(0, k).
//!
//! The batched blocks (kernel matrices, the rows of Aᵀ, Jᵀw, the weighted sums of first
//! derivatives) are DP-GIBO's hot path; for the RBF they sum (u_j − v_j)²·ℓ_j⁻² with ℓ_j⁻²
//! cached, the rounding DP-GIBO's results are computed with, and agree with [`super::Kernel`]
//! to 1e-14 (tested).

use super::kernel::{Kernel, KernelFamily};
use crate::error::{Error, Range, Result};
use ndarray::linalg::general_mat_mul;
use ndarray::{Array1, Array2, ArrayView1, ArrayView2, ArrayViewMut1, ArrayViewMut2};

#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
enum Form {
    /// The ARD RBF kernel, with 1/ℓ_j² cached for the batched blocks.
    Rbf { kernel: Kernel, inv_sq: Vec<f64> },
    /// (uᵀv + 1)²; `ones` are its unit lengthscales (the normalised step's scales).
    Polynomial { ones: Vec<f64> },
}

/// A surrogate kernel with fixed hyperparameters.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SurrogateKernel {
    form: Form,
}

impl SurrogateKernel {
    /// The ARD RBF kernel with lengthscales ℓ_j and signal variance s² (native units).
    pub fn rbf(lengthscales: Vec<f64>, signal_variance: f64) -> Result<Self> {
        if lengthscales.is_empty() {
            return Err(Error::invalid(
                "lengthscale",
                "[]",
                "one positive lengthscale per dimension",
            ));
        }
        for &l in &lengthscales {
            Range::Positive.check("lengthscale", l)?;
        }
        Range::Positive.check("signal_variance", signal_variance)?;
        let inv_sq = lengthscales.iter().map(|l| 1.0 / (l * l)).collect();
        Ok(SurrogateKernel {
            form: Form::Rbf {
                kernel: Kernel::new(KernelFamily::Rbf, lengthscales, signal_variance)?,
                inv_sq,
            },
        })
    }

    /// The polynomial kernel (uᵀv + 1)² in `dim` dimensions (spec 004 E.3).
    pub fn polynomial(dim: usize) -> Result<Self> {
        if dim == 0 {
            return Err(Error::invalid("dim", 0, "at least 1"));
        }
        Ok(SurrogateKernel {
            form: Form::Polynomial {
                ones: vec![1.0; dim],
            },
        })
    }

    pub fn dim(&self) -> usize {
        self.lengthscales().len()
    }

    /// `rbf` or `polynomial`.
    pub fn name(&self) -> &'static str {
        match self.form {
            Form::Rbf { .. } => "rbf",
            Form::Polynomial { .. } => "polynomial",
        }
    }

    /// The lengthscales (all 1 for the polynomial kernel): the per-coordinate scale of the
    /// normalised GIBO step.
    pub fn lengthscales(&self) -> &[f64] {
        match &self.form {
            Form::Rbf { kernel, .. } => kernel.lengthscales(),
            Form::Polynomial { ones } => ones,
        }
    }

    /// s² (1 for the polynomial kernel).
    pub fn signal_variance(&self) -> f64 {
        match &self.form {
            Form::Rbf { kernel, .. } => kernel.signal_variance(),
            Form::Polynomial { .. } => 1.0,
        }
    }

    /// k(u, v).
    pub fn eval(&self, u: ArrayView1<f64>, v: ArrayView1<f64>) -> f64 {
        match &self.form {
            Form::Rbf { kernel, .. } => kernel.eval(u, v),
            Form::Polynomial { .. } => (u.dot(&v) + 1.0).powi(2),
        }
    }

    /// ∂k(u, v)/∂u.
    pub fn grad_first(&self, u: ArrayView1<f64>, v: ArrayView1<f64>) -> Array1<f64> {
        match &self.form {
            Form::Rbf { kernel, .. } => kernel.grad_x(u, v),
            Form::Polynomial { .. } => v.mapv(|vp| 2.0 * (u.dot(&v) + 1.0) * vp),
        }
    }

    /// ∂²k(u, v)/∂u_p∂v_q (d × d).
    pub fn cross(&self, u: ArrayView1<f64>, v: ArrayView1<f64>) -> Array2<f64> {
        match &self.form {
            Form::Rbf { kernel, .. } => kernel.cross_hessian(u, v),
            Form::Polynomial { .. } => {
                let d = self.dim();
                let c = u.dot(&v) + 1.0;
                Array2::from_shape_fn((d, d), |(p, q)| {
                    let diag = if p == q { 2.0 * c } else { 0.0 };
                    diag + 2.0 * v[p] * u[q]
                })
            }
        }
    }

    /// The prior covariance of ∇f(θ): P0 = ∂_u∂_vᵀ k at u = v = θ.
    pub fn prior_gradient_covariance(&self, theta: ArrayView1<f64>) -> Array2<f64> {
        self.cross(theta, theta)
    }

    /// Tr P0: s² Σ_j ℓ_j⁻² (RBF), 2d(‖θ‖² + 1) + 2‖θ‖² (polynomial).
    pub fn prior_gradient_trace(&self, theta: ArrayView1<f64>) -> f64 {
        match &self.form {
            Form::Rbf { kernel, inv_sq } => kernel.signal_variance() * inv_sq.iter().sum::<f64>(),
            Form::Polynomial { .. } => {
                let t2 = theta.dot(&theta);
                2.0 * self.dim() as f64 * (t2 + 1.0) + 2.0 * t2
            }
        }
    }

    /// k(u, v) for coordinate slices: the hot path.
    #[inline]
    fn eval_slices(&self, u: &[f64], v: &[f64]) -> f64 {
        match &self.form {
            Form::Rbf { kernel, inv_sq } => {
                let mut s = 0.0;
                for ((a, b), w) in u.iter().zip(v).zip(inv_sq) {
                    let t = a - b;
                    s += t * t * w;
                }
                kernel.signal_variance() * libm::exp(-0.5 * s)
            }
            Form::Polynomial { .. } => {
                let c = 1.0 + u.iter().zip(v).map(|(a, b)| a * b).sum::<f64>();
                c * c
            }
        }
    }

    /// out[i, j] = k(a_i, b_j) for the rows of `a` and `b`.
    pub(crate) fn matrix_into(
        &self,
        a: ArrayView2<f64>,
        b: ArrayView2<f64>,
        mut out: ArrayViewMut2<f64>,
    ) {
        let d = self.dim();
        let (a, b) = (a.as_standard_layout(), b.as_standard_layout());
        let (a, b) = (
            a.as_slice().expect("standard"),
            b.as_slice().expect("standard"),
        );
        for (i, ai) in a.chunks_exact(d).enumerate() {
            for (j, bj) in b.chunks_exact(d).enumerate() {
                out[[i, j]] = self.eval_slices(ai, bj);
            }
        }
    }

    /// out[i, j] = k(a_i, a_j), each pair computed once.
    pub(crate) fn gram_into(&self, a: ArrayView2<f64>, mut out: ArrayViewMut2<f64>) {
        let d = self.dim();
        let a = a.as_standard_layout();
        let rows: Vec<&[f64]> = a.as_slice().expect("standard").chunks_exact(d).collect();
        for (i, ai) in rows.iter().enumerate() {
            for (j, aj) in rows[..=i].iter().enumerate() {
                let k = self.eval_slices(ai, aj);
                out[[i, j]] = k;
                out[[j, i]] = k;
            }
        }
    }

    /// The matrix [k(a_i, b_j)].
    pub fn matrix(&self, a: ArrayView2<f64>, b: ArrayView2<f64>) -> Array2<f64> {
        let mut out = Array2::zeros((a.nrows(), b.nrows()));
        self.matrix_into(a, b, out.view_mut());
        out
    }

    /// Row m of `out` = ∂_θ k(θ, x_m) for the rows x_m of `x`: Aᵀ of spec 004 §1.2.
    pub(crate) fn gradients_at_into(
        &self,
        theta: ArrayView1<f64>,
        x: ArrayView2<f64>,
        mut out: ArrayViewMut2<f64>,
    ) {
        let d = self.dim();
        let (theta, x) = (theta.as_standard_layout(), x.as_standard_layout());
        let (t, x) = (
            theta.as_slice().expect("standard"),
            x.as_slice().expect("standard"),
        );
        for (m, xm) in x.chunks_exact(d).enumerate() {
            match &self.form {
                Form::Rbf { inv_sq, .. } => {
                    let k = self.eval_slices(t, xm);
                    for p in 0..d {
                        out[[m, p]] = -(t[p] - xm[p]) * inv_sq[p] * k;
                    }
                }
                Form::Polynomial { .. } => {
                    let c = 2.0 * (1.0 + t.iter().zip(xm).map(|(a, b)| a * b).sum::<f64>());
                    for p in 0..d {
                        out[[m, p]] = c * xm[p];
                    }
                }
            }
        }
    }

    /// (∂_θ∂_xᵀ k(θ, x))ᵀ w: the derivative of wᵀ∂_θ k(θ, x) with respect to x.
    #[cfg(test)]
    fn cross_transpose_times(
        &self,
        theta: ArrayView1<f64>,
        x: ArrayView1<f64>,
        w: ArrayView1<f64>,
    ) -> Array1<f64> {
        let mut out = Array1::zeros(self.dim());
        self.add_cross_transpose_times(theta, x, w, 1.0, out.view_mut());
        out
    }

    /// out += scale · (∂_θ∂_xᵀ k(θ, x))ᵀ w.
    pub(crate) fn add_cross_transpose_times(
        &self,
        theta: ArrayView1<f64>,
        x: ArrayView1<f64>,
        w: ArrayView1<f64>,
        scale: f64,
        mut out: ArrayViewMut1<f64>,
    ) {
        let d = self.dim();
        match &self.form {
            Form::Rbf { kernel, inv_sq } => {
                // Symmetric: k[Λ⁻¹w − Λ⁻¹r (rᵀΛ⁻¹w)] with r = θ − x.
                let mut u = 0.0;
                let mut rw = 0.0;
                for p in 0..d {
                    let r = theta[p] - x[p];
                    u += r * r * inv_sq[p];
                    rw += r * inv_sq[p] * w[p];
                }
                let k = scale * kernel.signal_variance() * libm::exp(-0.5 * u);
                for p in 0..d {
                    out[p] += k * inv_sq[p] * (w[p] - (theta[p] - x[p]) * rw);
                }
            }
            Form::Polynomial { .. } => {
                // [2(θᵀx + 1)I + 2xθᵀ]ᵀ w = 2(θᵀx + 1)w + 2θ(xᵀw).
                let c = 2.0 * scale * (theta.dot(&x) + 1.0);
                let xw = 2.0 * scale * x.dot(&w);
                for p in 0..d {
                    out[p] += c * w[p] + theta[p] * xw;
                }
            }
        }
    }

    /// out_j += Σ_m c[j, m] ∂k(z_j, y_m)/∂z_j, given kzy[j, m] = k(z_j, y_m). `c` and
    /// `scratch` (the shape of `out`) are overwritten.
    pub(crate) fn add_weighted_first_gradients(
        &self,
        z: ArrayView2<f64>,
        y: ArrayView2<f64>,
        kzy: ArrayView2<f64>,
        mut c: ArrayViewMut2<f64>,
        mut scratch: ArrayViewMut2<f64>,
        mut out: ArrayViewMut2<f64>,
    ) {
        match &self.form {
            Form::Rbf { inv_sq, .. } => {
                // Σ_m c_jm k_jm (−Λ⁻¹)(z_j − y_m) = Λ⁻¹[(E y)_j − (Σ_m e_jm) z_j], E = c∘K.
                c.zip_mut_with(&kzy, |c, k| *c *= k);
                general_mat_mul(1.0, &c, &y, 0.0, &mut scratch);
                for (j, row) in c.rows().into_iter().enumerate() {
                    let s = row.sum();
                    for (p, w) in inv_sq.iter().enumerate() {
                        out[[j, p]] += w * (scratch[[j, p]] - s * z[[j, p]]);
                    }
                }
            }
            Form::Polynomial { .. } => {
                // Σ_m c_jm 2(z_jᵀy_m + 1) y_m (E.3's small problems only: allocates).
                let zy = z.dot(&y.t());
                c.zip_mut_with(&zy, |c, zy| *c *= 2.0 * (zy + 1.0));
                general_mat_mul(1.0, &c, &y, 1.0, &mut out);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::{normal, stream};
    use ndarray::{array, Array1};

    fn random_vec(d: usize, seed: u64) -> Array1<f64> {
        let mut rng = stream(seed, &[]);
        Array1::from_shape_fn(d, |_| 0.7 * normal(&mut rng))
    }

    fn kernels(d: usize) -> Vec<SurrogateKernel> {
        let ls: Vec<f64> = (0..d).map(|j| 0.6 + 0.3 * j as f64).collect();
        vec![
            SurrogateKernel::rbf(ls, 1.7).unwrap(),
            SurrogateKernel::rbf(vec![1.0; d], 1.0).unwrap(),
            SurrogateKernel::polynomial(d).unwrap(),
        ]
    }

    fn rel_err(a: f64, b: f64) -> f64 {
        (a - b).abs() / b.abs().max(1e-3)
    }

    /// ∂_u k and ∂_u∂_vᵀ k against central finite differences of k.
    #[test]
    fn derivative_blocks_match_finite_differences() {
        let d = 4;
        let h = 1e-5;
        for kernel in kernels(d) {
            for seed in 0..3 {
                let u = random_vec(d, seed);
                let v = random_vec(d, seed + 10);
                let g = kernel.grad_first(u.view(), v.view());
                let c = kernel.cross(u.view(), v.view());
                for p in 0..d {
                    let mut up = u.clone();
                    up[p] += h;
                    let mut um = u.clone();
                    um[p] -= h;
                    let fd = (kernel.eval(up.view(), v.view()) - kernel.eval(um.view(), v.view()))
                        / (2.0 * h);
                    assert!(
                        rel_err(g[p], fd) < 1e-6,
                        "{} grad {p}: {} vs {fd}",
                        kernel.name(),
                        g[p]
                    );
                    for q in 0..d {
                        // ∂/∂v_q of ∂k/∂u_p, by differencing the analytic first derivative.
                        let mut vp = v.clone();
                        vp[q] += h;
                        let mut vm = v.clone();
                        vm[q] -= h;
                        let fd = (kernel.grad_first(u.view(), vp.view())[p]
                            - kernel.grad_first(u.view(), vm.view())[p])
                            / (2.0 * h);
                        assert!(
                            rel_err(c[[p, q]], fd) < 1e-6,
                            "{} cross {p},{q}: {} vs {fd}",
                            kernel.name(),
                            c[[p, q]]
                        );
                    }
                }
                // J(θ, x)ᵀ w is the gradient in x of wᵀ ∂_θ k(θ, x).
                let w = random_vec(d, seed + 20);
                let jw = kernel.cross_transpose_times(u.view(), v.view(), w.view());
                assert!((&jw - &c.t().dot(&w)).iter().all(|e| e.abs() < 1e-12));
            }
        }
    }

    /// P0 against the mixed second difference of k at u = v = θ, and its trace.
    #[test]
    fn prior_gradient_covariance_matches_second_differences() {
        let d = 3;
        let h = 1e-4;
        for kernel in kernels(d) {
            let t = random_vec(d, 5);
            let p0 = kernel.prior_gradient_covariance(t.view());
            for p in 0..d {
                for q in 0..d {
                    let shifted = |sp: f64, sq: f64| {
                        let mut u = t.clone();
                        let mut v = t.clone();
                        u[p] += sp;
                        v[q] += sq;
                        kernel.eval(u.view(), v.view())
                    };
                    let fd = (shifted(h, h) - shifted(h, -h) - shifted(-h, h) + shifted(-h, -h))
                        / (4.0 * h * h);
                    assert!(rel_err(p0[[p, q]], fd) < 1e-6, "{} {p},{q}", kernel.name());
                }
            }
            let tr = p0.diag().sum();
            assert!((kernel.prior_gradient_trace(t.view()) - tr).abs() < 1e-12);
        }
        // RBF with ℓ = 1, s² = 1: Tr P0 = d.
        let k = SurrogateKernel::rbf(vec![1.0; 15], 1.0).unwrap();
        assert_eq!(k.prior_gradient_trace(Array1::zeros(15).view()), 15.0);
        // Polynomial: 2(‖θ‖² + 1)I + 2θθᵀ.
        let k = SurrogateKernel::polynomial(2).unwrap();
        let p0 = k.prior_gradient_covariance(array![1.0, 2.0].view());
        assert_eq!(p0, array![[14.0, 4.0], [4.0, 20.0]]);
    }

    /// The RBF's batched blocks (their own summation order, DP-GIBO's hot path) agree with
    /// gp::Kernel's pairwise value and derivatives, which the pairwise methods use.
    #[test]
    fn rbf_agrees_with_gp_core() {
        let ls = vec![0.5, 1.5, 2.0];
        let ours = SurrogateKernel::rbf(ls.clone(), 2.0).unwrap();
        let core = crate::gp::Kernel::new(crate::gp::KernelFamily::Rbf, ls, 2.0).unwrap();
        let (u, v) = (random_vec(3, 1), random_vec(3, 2));
        assert_eq!(ours.eval(u.view(), v.view()), core.eval(u.view(), v.view()));
        let x = Array2::from_shape_fn((4, 3), |(i, j)| random_vec(3, 50 + i as u64)[j]);
        let k = ours.matrix(u.view().insert_axis(ndarray::Axis(0)), x.view());
        let mut rows = Array2::zeros((4, 3));
        ours.gradients_at_into(u.view(), x.view(), rows.view_mut());
        for m in 0..4 {
            assert!((k[[0, m]] - core.eval(u.view(), x.row(m))).abs() < 1e-14);
            let dg = &rows.row(m) - &core.grad_x(u.view(), x.row(m));
            assert!(dg.iter().all(|e| e.abs() < 1e-14));
            let jw = ours.cross_transpose_times(u.view(), x.row(m), v.view());
            let want = core.cross_hessian(u.view(), x.row(m)).t().dot(&v);
            assert!((&jw - &want).iter().all(|e| e.abs() < 1e-14));
        }
        let tr = core.cross_hessian(u.view(), u.view()).diag().sum();
        assert!((ours.prior_gradient_trace(u.view()) - tr).abs() < 1e-14);
    }

    #[test]
    fn weighted_first_gradients_sum_the_pairwise_gradients() {
        let d = 3;
        for kernel in kernels(d) {
            let z = Array2::from_shape_fn((2, d), |(i, j)| random_vec(d, 30 + i as u64)[j]);
            let y = Array2::from_shape_fn((4, d), |(i, j)| random_vec(d, 40 + i as u64)[j]);
            let c = Array2::from_shape_fn((2, 4), |(i, j)| (i + 2 * j) as f64 - 2.5);
            let kzy = kernel.matrix(z.view(), y.view());
            let mut gram = Array2::zeros((4, 4));
            kernel.gram_into(y.view(), gram.view_mut());
            assert!((&gram - &kernel.matrix(y.view(), y.view()))
                .iter()
                .all(|e| e.abs() < 1e-15));
            let mut out = Array2::from_elem((2, d), 0.25);
            let mut scratch = Array2::zeros((2, d));
            kernel.add_weighted_first_gradients(
                z.view(),
                y.view(),
                kzy.view(),
                c.clone().view_mut(),
                scratch.view_mut(),
                out.view_mut(),
            );
            for j in 0..2 {
                let mut want = Array1::from_elem(d, 0.25);
                for m in 0..4 {
                    want += &(kernel.grad_first(z.row(j), y.row(m)) * c[[j, m]]);
                }
                assert!((&out.row(j) - &want).iter().all(|e| e.abs() < 1e-12));
            }
        }
    }

    #[test]
    fn bad_parameters_are_rejected() {
        assert!(SurrogateKernel::rbf(vec![], 1.0).is_err());
        assert!(SurrogateKernel::rbf(vec![1.0, 0.0], 1.0).is_err());
        assert!(SurrogateKernel::rbf(vec![1.0], f64::NAN).is_err());
        assert!(SurrogateKernel::polynomial(0).is_err());
    }
}
