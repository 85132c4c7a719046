//! The SMO core shared by the C-SVM ([`super::smo`]) and ε-SVR ([`super::svr`]): LIBSVM's
//! `Solver` (Chang & Lin, "LIBSVM: a library for support vector machines", 2011, §4) for
//!
//! ```text
//! min_α  ½ αᵀQα + pᵀα   s.t.  0 ≤ α_t ≤ C,  Σ_t y_t α_t = 0,   Q_st = y_s y_t K(r_s, r_t),
//! ```
//!
//! where y_t = ±1 and each variable t is tied to a training row r_t (the C-SVM has one variable
//! per row, ε-SVR two). The gradient G = Qα + p is kept up to date, two coordinates at a time.
//! The pair is chosen by the second-order working-set selection of Fan, Chen & Lin (JMLR 6,
//! 2005, "WSS 2"): i is the maximal violator of the KKT conditions, j the partner that most
//! decreases the objective along the pair (quadratic coefficients ≤ 0 are replaced by
//! τ = 1e-12, as LIBSVM does). The two-variable subproblem is solved in closed form and clipped
//! to the box exactly as in LIBSVM's `Solver::Solve`. There is no shrinking and no kernel
//! cache: the caller passes the full Gram matrix of the training rows, in f64 (LIBSVM stores Q
//! in f32).
//!
//! Stopping: when the maximal KKT violation m(α) − M(α) (LIBSVM's `Gmax + Gmax2`) is ≤ `tol`.
//! If it is still above `tol` after `max_iter` pair updates, [`Solver::run`] returns an error.
//!
//! ρ as LIBSVM's `calculate_rho`: the mean of y_t G_t over the free variables (0 < α_t < C),
//! or, when there are none, the midpoint of the interval of feasible ρ. The decision function
//! is Σ_t y_t α_t K(r_t, x) − ρ.

use crate::error::{Error, Result};
use ndarray::Array2;

/// LIBSVM's replacement for a non-positive curvature along the chosen pair.
const TAU: f64 = 1e-12;

/// The dual problem: the Gram matrix of the training rows and, per variable, its row, label
/// and linear term.
pub(crate) struct Dual<'a> {
    pub gram: &'a Array2<f64>,
    /// r_t: the row of `gram` that variable t stands for.
    pub row: Vec<usize>,
    /// y_t = ±1.
    pub y: Vec<f64>,
    /// p_t, the linear term (−1 for the C-SVM).
    pub p: Vec<f64>,
    /// The box constraint C > 0, the same for every variable.
    pub c: f64,
}

/// The optimum found: α, ρ and the number of pair updates.
pub(crate) struct Solution {
    pub alpha: Vec<f64>,
    pub rho: f64,
    pub iterations: usize,
}

/// LIBSVM's `Solver` without shrinking.
pub(crate) struct Solver<'a> {
    dual: Dual<'a>,
    /// K(r_t, r_t), LIBSVM's `QD`.
    diag: Vec<f64>,
    alpha: Vec<f64>,
    /// G = Qα + p.
    grad: Vec<f64>,
}

impl<'a> Solver<'a> {
    /// The solver started at α = 0 (feasible), where G = p.
    pub fn new(dual: Dual<'a>) -> Self {
        let n = dual.y.len();
        debug_assert!(dual.row.len() == n && dual.p.len() == n);
        let diag = dual.row.iter().map(|&r| dual.gram[[r, r]]).collect();
        Solver {
            alpha: vec![0.0; n],
            grad: dual.p.clone(),
            diag,
            dual,
        }
    }

    pub fn run(mut self, tol: f64, max_iter: usize) -> Result<Solution> {
        let mut iterations = 0;
        while let Some((i, j, violation)) = self.select_working_set(tol) {
            if iterations == max_iter {
                return Err(Error::Numerical(format!(
                    "SMO did not converge in max_iter = {max_iter} pair updates (maximal KKT \
                     violation {violation:.3e} > tol = {tol:.3e}); raise max_iter or tol"
                )));
            }
            self.update_pair(i, j);
            iterations += 1;
        }
        let rho = self.rho();
        Ok(Solution {
            alpha: self.alpha,
            rho,
            iterations,
        })
    }

    fn is_upper(&self, t: usize) -> bool {
        self.alpha[t] >= self.dual.c
    }

    fn is_lower(&self, t: usize) -> bool {
        self.alpha[t] <= 0.0
    }

    /// WSS 2: the pair (i, j) and the violation m(α) − M(α), or None when it is ≤ tol.
    fn select_working_set(&self, tol: f64) -> Option<(usize, usize, f64)> {
        let (y, g, row) = (&self.dual.y, &self.grad, &self.dual.row);
        let n = y.len();
        // i = argmax over I_up of −y_t G_t (ties: the last, as LIBSVM's `>=`).
        let mut g_max = f64::NEG_INFINITY;
        let mut best_i = None;
        for t in 0..n {
            let in_up = if y[t] > 0.0 {
                !self.is_upper(t)
            } else {
                !self.is_lower(t)
            };
            if in_up && -y[t] * g[t] >= g_max {
                g_max = -y[t] * g[t];
                best_i = Some(t);
            }
        }
        let i = best_i?;
        let k_i = self.dual.gram.row(row[i]);
        let k_ii = self.diag[i];
        // j over I_low with −y_j G_j < g_max, minimising −(g_max + y_j G_j)² / a_ij.
        let mut g_max2 = f64::NEG_INFINITY;
        let mut best_j = None;
        let mut obj_min = f64::INFINITY;
        for t in 0..n {
            let in_low = if y[t] > 0.0 {
                !self.is_lower(t)
            } else {
                !self.is_upper(t)
            };
            if !in_low {
                continue;
            }
            let yg = y[t] * g[t];
            g_max2 = g_max2.max(yg);
            let grad_diff = g_max + yg;
            if grad_diff > 0.0 {
                // The curvature along the pair: K_ii + K_tt − 2 K_it for either label of t.
                let a = positive_or_tau(k_ii + self.diag[t] - 2.0 * k_i[row[t]]);
                let obj = -grad_diff * grad_diff / a;
                if obj <= obj_min {
                    obj_min = obj;
                    best_j = Some(t);
                }
            }
        }
        let violation = g_max + g_max2;
        if violation <= tol {
            return None;
        }
        best_j.map(|j| (i, j, violation))
    }

    /// Solves the two-variable subproblem in (i, j) exactly and clips it to the box, as
    /// LIBSVM's `Solver::Solve`, then updates the gradient.
    fn update_pair(&mut self, i: usize, j: usize) {
        let Dual {
            gram, row, y, c, ..
        } = &self.dual;
        let c = *c;
        let (k_i, k_j) = (gram.row(row[i]), gram.row(row[j]));
        let q_ij = y[i] * y[j] * k_i[row[j]];
        let (old_i, old_j) = (self.alpha[i], self.alpha[j]);
        let (mut ai, mut aj) = (old_i, old_j);
        let (gi, gj) = (self.grad[i], self.grad[j]);
        if y[i] != y[j] {
            let quad = positive_or_tau(self.diag[i] + self.diag[j] + 2.0 * q_ij);
            let delta = (-gi - gj) / quad;
            let diff = ai - aj;
            ai += delta;
            aj += delta;
            if diff > 0.0 {
                if aj < 0.0 {
                    aj = 0.0;
                    ai = diff;
                }
            } else if ai < 0.0 {
                ai = 0.0;
                aj = -diff;
            }
            if diff > 0.0 {
                if ai > c {
                    ai = c;
                    aj = c - diff;
                }
            } else if aj > c {
                aj = c;
                ai = c + diff;
            }
        } else {
            let quad = positive_or_tau(self.diag[i] + self.diag[j] - 2.0 * q_ij);
            let delta = (gi - gj) / quad;
            let sum = ai + aj;
            ai -= delta;
            aj += delta;
            if sum > c {
                if ai > c {
                    ai = c;
                    aj = sum - c;
                }
            } else if aj < 0.0 {
                aj = 0.0;
                ai = sum;
            }
            if sum > c {
                if aj > c {
                    aj = c;
                    ai = sum - c;
                }
            } else if ai < 0.0 {
                ai = 0.0;
                aj = sum;
            }
        }
        self.alpha[i] = ai;
        self.alpha[j] = aj;
        // G_t += Q_ti Δα_i + Q_tj Δα_j = y_t (y_i Δα_i K_ti + y_j Δα_j K_tj).
        let (si, sj) = (y[i] * (ai - old_i), y[j] * (aj - old_j));
        for ((g, &yt), &r) in self.grad.iter_mut().zip(y).zip(row) {
            *g += yt * (si * k_i[r] + sj * k_j[r]);
        }
    }

    /// LIBSVM's `calculate_rho`.
    fn rho(&self) -> f64 {
        let y = &self.dual.y;
        let (mut ub, mut lb) = (f64::INFINITY, f64::NEG_INFINITY);
        let (mut sum_free, mut n_free) = (0.0, 0usize);
        for (t, (&yt, &gt)) in y.iter().zip(&self.grad).enumerate() {
            let yg = yt * gt;
            let positive = yt > 0.0;
            if self.is_upper(t) {
                if positive {
                    lb = lb.max(yg);
                } else {
                    ub = ub.min(yg);
                }
            } else if self.is_lower(t) {
                if positive {
                    ub = ub.min(yg);
                } else {
                    lb = lb.max(yg);
                }
            } else {
                n_free += 1;
                sum_free += yg;
            }
        }
        if n_free > 0 {
            sum_free / n_free as f64
        } else {
            // Both ends are finite when both labels occur: with no free variable, ub = ∞ would
            // need every positive at C and every negative at 0 (lb = −∞ the reverse),
            // contradicting Σ y_t α_t = 0.
            (ub + lb) / 2.0
        }
    }
}

fn positive_or_tau(a: f64) -> f64 {
    if a > 0.0 {
        a
    } else {
        TAU
    }
}
