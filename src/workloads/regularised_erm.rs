//! Assumption 2 of spec 002 on real data (Algorithm 3; §4.3 "SVM / logistic regression"): a
//! linear classifier w_λ = argmin (λ/2)‖w‖² + (1/n)Σ φ(y_i wᵀx_i) trained on a *public* split,
//! scored on a *private* validation split by the ramp loss g = min(1, max(0, 1 − y wᵀx))
//! (L = 1, g* = 1). Features are mapped into the unit ball (‖x‖ ≤ 1) so that φ and g are
//! 1-Lipschitz in w.
//!
//! Training is public, so w_λ is computed once per grid λ and shared by neighbouring
//! validation sets ([`RegularisedErm::replaced`]); a gain is a table lookup.
//!
//! Theorem 7 assumes exact training. We solve by Newton's method to ‖∇F(ŵ)‖ ≤ `tol`; by
//! λ-strong convexity ‖ŵ − w_λ‖ ≤ tol/λ, so every gain is within L·tol/λ_min of the exact one,
//! and the workload declares that as `solver_error` (the tuner adds twice it to Δ_f).

use super::{Hyper, LipschitzAssumption, Oracle, RegularisedGain, Space, Workload};
use crate::data::{clip_rows, Standardiser};
use crate::error::{Error, Range, Result};
use ndarray::{concatenate, Array1, Array2, ArrayView1, ArrayView2, Axis};
use ndarray_linalg::SolveH;
use std::sync::Arc;

/// Gradient-norm tolerance of the exact solver (spec 002 §4.3: "solved to 1e-10").
pub const SOLVER_TOL: f64 = 1e-10;

/// The convex training loss φ(z) of the margin z = y·wᵀx; both have |φ′| ≤ 1, so they are
/// 1-Lipschitz in w when ‖x‖ ≤ 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErmLoss {
    /// ln(1 + e^{−z}).
    Logistic,
    /// The Huberised hinge (a smooth SVM): 0 for z ≥ 1, (1 − z)²/2 for 0 < z < 1, ½ − z below.
    SmoothHinge,
}

impl ErmLoss {
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "logistic" => Ok(ErmLoss::Logistic),
            "smooth-hinge" => Ok(ErmLoss::SmoothHinge),
            _ => Err(Error::invalid("loss", s, "`logistic` or `smooth-hinge`")),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            ErmLoss::Logistic => "logistic",
            ErmLoss::SmoothHinge => "smooth-hinge",
        }
    }

    /// (φ(z), φ′(z), φ″(z)).
    fn eval(self, z: f64) -> (f64, f64, f64) {
        match self {
            ErmLoss::Logistic => {
                // Stable in both tails: ln(1 + e^{−z}) = max(−z, 0) + ln(1 + e^{−|z|}).
                let p = 1.0 / (1.0 + libm::exp(-z)); // σ(z)
                (
                    (-z).max(0.0) + libm::log1p(libm::exp(-z.abs())),
                    p - 1.0,
                    p * (1.0 - p),
                )
            }
            ErmLoss::SmoothHinge => {
                if z >= 1.0 {
                    (0.0, 0.0, 0.0)
                } else if z > 0.0 {
                    ((1.0 - z).powi(2) / 2.0, z - 1.0, 1.0)
                } else {
                    (0.5 - z, -1.0, 0.0)
                }
            }
        }
    }
}

/// The ramp loss min(1, max(0, 1 − z)) of a margin z: in [0, 1] and 1-Lipschitz.
pub fn ramp(margin: f64) -> f64 {
    (1.0 - margin).clamp(0.0, 1.0)
}

/// Labels ±1 from class indices (class 1 → +1): the binary convention of the crate.
pub fn signed_labels(labels: &[usize]) -> Result<Vec<f64>> {
    labels
        .iter()
        .map(|&c| match c {
            0 => Ok(-1.0),
            1 => Ok(1.0),
            _ => Err(Error::invalid("label", c, "a binary class index (0 or 1)")),
        })
        .collect()
}

/// Features in the unit ball: standardised by `s` (fitted on public data), each row clipped
/// to norm 1/√2, and a constant 1/√2 appended as the bias feature, so ‖x‖ ≤ 1 for every row
/// of every split. The map is per row and data-independent given `s`.
pub fn unit_ball_features(x: &Array2<f64>, s: &Standardiser) -> Array2<f64> {
    let half = std::f64::consts::FRAC_1_SQRT_2;
    let mut z = s.apply(x);
    clip_rows(&mut z, half);
    let bias = Array2::from_elem((z.nrows(), 1), half);
    concatenate![Axis(1), z, bias]
}

/// The exact minimiser of F(w) = (λ/2)‖w‖² + (1/n)Σ φ(y_i wᵀx_i) by Newton's method with
/// backtracking, to ‖∇F‖ ≤ `tol`. Returns (w, ‖∇F(w)‖).
pub fn fit_regularised(
    x: ArrayView2<f64>,
    y: &[f64],
    lambda: f64,
    loss: ErmLoss,
    tol: f64,
) -> Result<(Array1<f64>, f64)> {
    let lambda = Range::Positive.check("lambda", lambda)?;
    if x.nrows() == 0 || x.nrows() != y.len() {
        return Err(Error::invalid(
            "training set",
            format!("{} rows, {} labels", x.nrows(), y.len()),
            "at least one example and one label per row",
        ));
    }
    let n = x.nrows() as f64;
    let objective = |w: &Array1<f64>| -> f64 {
        let margins = x.dot(w) * ArrayView1::from(y);
        0.5 * lambda * w.dot(w) + margins.iter().map(|&z| loss.eval(z).0).sum::<f64>() / n
    };
    let mut w = Array1::<f64>::zeros(x.ncols());
    for _ in 0..200 {
        let margins = x.dot(&w) * ArrayView1::from(y);
        let (mut d1, mut d2) = (Array1::zeros(y.len()), Array1::zeros(y.len()));
        for (i, &z) in margins.iter().enumerate() {
            let (_, a, b) = loss.eval(z);
            d1[i] = a * y[i] / n;
            d2[i] = b / n;
        }
        let grad = x.t().dot(&d1) + lambda * &w;
        let norm = grad.dot(&grad).sqrt();
        if norm <= tol {
            return Ok((w, norm));
        }
        let mut hess = x.t().dot(&(&x * &d2.view().insert_axis(Axis(1))));
        hess.diag_mut().mapv_inplace(|h| h + lambda);
        let step = hess
            .solveh(&grad)
            .map_err(|e| Error::Numerical(format!("Newton step at λ = {lambda}: {e}")))?;
        // Armijo backtracking keeps the non-C² smooth hinge globally convergent. Near the
        // optimum the decrease (~‖∇F‖²/λ) is below the rounding of F, so F may be up to a few
        // ulps worse: the full Newton step is then taken.
        let (f0, slope) = (objective(&w), grad.dot(&step));
        let rounding = 1e-14 * f0.abs().max(1.0);
        let mut t = 1.0;
        while t > 1e-12 && objective(&(&w - &(t * &step))) > f0 - 1e-4 * t * slope + rounding {
            t *= 0.5;
        }
        w = &w - &(t * &step);
    }
    Err(Error::Numerical(format!(
        "the regularised {} fit at λ = {lambda} did not reach ‖∇F‖ ≤ {tol} in 200 Newton steps",
        loss.name()
    )))
}

/// Algorithm 3's workload: w_λ for each grid λ (public), the private validation split and its
/// gains f_V(w_λ) = −(1/m)Σ ramp(y wᵀx).
#[derive(Clone, Debug)]
pub struct RegularisedErm {
    name: String,
    space: Space,
    lambdas: Vec<f64>,
    weights: Arc<Array2<f64>>, // one row per λ
    val_x: Array2<f64>,
    val_y: Vec<f64>,
    ramps: Array2<f64>, // validation record × λ
    gains: Vec<f64>,
    assumption: LipschitzAssumption,
}

impl RegularisedErm {
    /// Trains w_λ on (`train_x`, `train_y`) for each λ of `lambdas` (all in [λ_min, λ_max])
    /// and scores the validation split. Rows must already lie in the unit ball.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        name: &str,
        train_x: ArrayView2<f64>,
        train_y: &[f64],
        val_x: Array2<f64>,
        val_y: Vec<f64>,
        lambdas: &[f64],
        (lambda_min, lambda_max): (f64, f64),
        loss: ErmLoss,
    ) -> Result<Self> {
        if lambdas.is_empty() {
            return Err(Error::invalid("grid", "empty", "at least one λ"));
        }
        if let Some(l) = lambdas
            .iter()
            .find(|&&l| !(l >= lambda_min && l <= lambda_max))
        {
            return Err(Error::invalid(
                "grid",
                l,
                format!("λ in [lambda_min, lambda_max] = [{lambda_min}, {lambda_max}]"),
            ));
        }
        if val_x.nrows() == 0 || val_x.nrows() != val_y.len() {
            return Err(Error::invalid(
                "validation set",
                val_x.nrows(),
                "at least one example, one label per row",
            ));
        }
        for (name, x) in [("training", train_x), ("validation", val_x.view())] {
            if x.rows().into_iter().any(|r| r.dot(&r) > 1.0 + 1e-12) {
                return Err(Error::invalid(
                    "features",
                    name,
                    "rows of norm <= 1 (map them with unit_ball_features)",
                ));
            }
        }
        let mut weights = Array2::zeros((lambdas.len(), train_x.ncols()));
        for (j, &l) in lambdas.iter().enumerate() {
            let (w, _) = fit_regularised(train_x, train_y, l, loss, SOLVER_TOL)?;
            weights.row_mut(j).assign(&w);
        }
        let ramps = Self::ramp_matrix(&weights, val_x.view(), &val_y);
        let assumption = LipschitzAssumption {
            g_star: 1.0,
            lipschitz: 1.0,
            validation_size: val_y.len(),
            lambda_min,
            lambda_max,
            solver_error: SOLVER_TOL / lambda_min,
        };
        let mut out = RegularisedErm {
            name: name.to_string(),
            space: Space::Finite(lambdas.iter().map(|&l| vec![l]).collect()),
            lambdas: lambdas.to_vec(),
            weights: Arc::new(weights),
            val_x,
            val_y,
            ramps,
            gains: Vec::new(),
            assumption,
        };
        out.gains = out.compute_gains();
        Ok(out)
    }

    /// ramp(y·w_λᵀx) for each row (x, y) and λ.
    fn ramp_matrix(weights: &Array2<f64>, x: ArrayView2<f64>, y: &[f64]) -> Array2<f64> {
        let mut m = x.dot(&weights.t());
        for (mut row, &yi) in m.rows_mut().into_iter().zip(y) {
            row.mapv_inplace(|z| ramp(yi * z));
        }
        m
    }

    fn compute_gains(&self) -> Vec<f64> {
        let m = self.val_y.len() as f64;
        self.ramps
            .sum_axis(Axis(0))
            .iter()
            .map(|s| -s / m)
            .collect()
    }

    /// The neighbouring validation set with record `i` replaced by (`x`, `y`): same public
    /// training and weights, new gains.
    pub fn replaced(&self, i: usize, x: ArrayView1<f64>, y: f64) -> Result<Self> {
        if i >= self.val_y.len() {
            return Err(Error::invalid(
                "record",
                i,
                format!("an index below the validation size {}", self.val_y.len()),
            ));
        }
        let mut out = self.clone();
        out.val_x.row_mut(i).assign(&x);
        out.val_y[i] = y;
        let row = Self::ramp_matrix(&self.weights, x.insert_axis(Axis(0)), &[y]);
        out.ramps.row_mut(i).assign(&row.row(0));
        out.gains = out.compute_gains();
        Ok(out)
    }

    /// The validation split (features in the unit ball, labels ±1).
    pub fn validation(&self) -> (ArrayView2<'_, f64>, &[f64]) {
        (self.val_x.view(), &self.val_y)
    }

    /// f_V(w_λ) for each grid λ, in grid order.
    pub fn gains(&self) -> &[f64] {
        &self.gains
    }

    pub fn lambdas(&self) -> &[f64] {
        &self.lambdas
    }
}

impl RegularisedGain for RegularisedErm {
    fn assumption(&self) -> &LipschitzAssumption {
        &self.assumption
    }
    /// f_V(w_λ) for a grid λ; NaN off the grid (the tuner reports it as an error).
    fn gain(&self, h: &Hyper) -> f64 {
        h.first()
            .and_then(|l| self.lambdas.iter().position(|x| x == l))
            .map_or(f64::NAN, |j| self.gains[j])
    }
}

impl Oracle for RegularisedErm {
    fn utility(&self, h: &Hyper) -> f64 {
        self.gain(h)
    }
    fn best_utility(&self) -> f64 {
        self.gains.iter().copied().fold(f64::NEG_INFINITY, f64::max)
    }
}

impl Workload for RegularisedErm {
    fn name(&self) -> String {
        self.name.clone()
    }
    fn space(&self) -> &Space {
        &self.space
    }
    fn oracle(&self) -> &dyn Oracle {
        self
    }
    fn regularised_gain(&self) -> Option<&dyn RegularisedGain> {
        Some(self)
    }
}
