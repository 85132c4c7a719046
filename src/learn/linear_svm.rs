//! The binary linear soft-margin SVM of spec 000 §6 Fig. 1: minimise
//! ‖w‖₂² + α·(1/n)·Σᵢ max(0, 1 − yᵢ(w·xᵢ + b)) (or ½‖w‖₂² by a flag, spec 000 §8.2, or no
//! penalty at all for spec 001's adult SVM), the bias unregularised. The hinge is the
//! per-example loss; the norm is the regulariser.

use super::dense::{dot, norm_sq, Dense};
use super::model::{ExampleGradient, Model};
use super::{Activation, Head, Network};
use crate::error::{Error, Range, Result};
use rand::RngCore;

/// The weight penalty R(w).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WeightPenalty {
    /// ‖w‖₂², as the seed paper writes the objective.
    SquaredNorm,
    /// ½‖w‖₂², the usual convention.
    HalfSquaredNorm,
    /// No penalty: the plain hinge (spec 001's adult SVM, trained by DP-SGD on the hinge
    /// alone, as the DPareto release does).
    None,
}

/// A linear SVM on `n_features` inputs. Parameters: w (one per feature), then b. Class 1 is
/// y = +1, class 0 is y = −1; per-example loss α·max(0, 1 − y(w·x + b)).
#[derive(Clone, Debug, PartialEq)]
pub struct LinearSvm {
    n_features: usize,
    alpha: f64,
    penalty: WeightPenalty,
}

impl LinearSvm {
    /// `alpha` > 0 weighs the hinge against the penalty.
    pub fn new(n_features: usize, alpha: f64, penalty: WeightPenalty) -> Result<Self> {
        if n_features == 0 {
            return Err(Error::invalid("n_features", 0, "an integer >= 1"));
        }
        Ok(LinearSvm {
            n_features,
            alpha: Range::Positive.check("alpha", alpha)?,
            penalty,
        })
    }
    pub fn alpha(&self) -> f64 {
        self.alpha
    }
    pub fn penalty(&self) -> WeightPenalty {
        self.penalty
    }
    /// R(w) = factor·‖w‖².
    fn penalty_factor(&self) -> f64 {
        match self.penalty {
            WeightPenalty::SquaredNorm => 1.0,
            WeightPenalty::HalfSquaredNorm => 0.5,
            WeightPenalty::None => 0.0,
        }
    }
    /// w·x + b.
    fn decision(&self, params: &[f64], x: &[f64]) -> f64 {
        dot(&params[..self.n_features], x) + params[self.n_features]
    }
}

impl Model for LinearSvm {
    fn n_features(&self) -> usize {
        self.n_features
    }
    fn n_classes(&self) -> usize {
        2
    }
    fn n_params(&self) -> usize {
        self.n_features + 1
    }
    /// ∂ℓ/∂(w·x + b).
    fn scratch_len(&self) -> usize {
        1
    }
    /// Zeros: the objective is convex.
    fn init(&self, _rng: &mut dyn RngCore) -> Vec<f64> {
        vec![0.0; self.n_params()]
    }
    fn backward(
        &self,
        params: &[f64],
        x: &[f64],
        label: usize,
        scratch: &mut [f64],
    ) -> ExampleGradient {
        let y = if label == 1 { 1.0 } else { -1.0 };
        let margin = y * self.decision(params, x);
        // The hinge's subgradient at margin 1 is taken as 0.
        let slope = if margin < 1.0 { -self.alpha * y } else { 0.0 };
        scratch[0] = slope;
        ExampleGradient {
            loss: self.alpha * (1.0 - margin).max(0.0),
            norm_sq: slope * slope * (norm_sq(x) + 1.0),
        }
    }
    fn add_gradient(&self, x: &[f64], scale: f64, scratch: &[f64], acc: &mut [f64]) {
        let c = scale * scratch[0];
        if c != 0.0 {
            let (w, b) = acc.split_at_mut(self.n_features);
            super::dense::axpy(c, x, w);
            b[0] += c;
        }
    }
    /// Class 1 when w·x + b ≥ 0.
    fn predict(&self, params: &[f64], x: &[f64], _scratch: &mut [f64]) -> usize {
        usize::from(self.decision(params, x) >= 0.0)
    }
    fn network(&self) -> Option<Network> {
        Some(Network {
            // w then b: the layout of a dense layer with one output.
            layers: vec![Dense {
                inputs: self.n_features,
                outputs: 1,
                offset: 0,
            }],
            activation: Activation::Relu,
            head: Head::Hinge { alpha: self.alpha },
        })
    }
    fn has_regulariser(&self) -> bool {
        self.penalty != WeightPenalty::None
    }
    fn regulariser(&self, params: &[f64]) -> f64 {
        if self.penalty == WeightPenalty::None {
            return 0.0;
        }
        self.penalty_factor() * norm_sq(&params[..self.n_features])
    }
    fn add_regulariser_gradient(&self, params: &[f64], grad: &mut [f64]) {
        if self.penalty == WeightPenalty::None {
            // Nothing to add (and 0·w would turn an infinite weight into NaN).
            return;
        }
        let two_f = 2.0 * self.penalty_factor();
        for (g, w) in grad.iter_mut().zip(&params[..self.n_features]) {
            *g += two_f * w;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::learn::model::testing::{check_gradients, check_regulariser};

    #[test]
    fn gradients_match_finite_differences() {
        let params = [0.4, -0.7, 0.2];
        // Margins y(w·x + b): 0.2 − 0.28 + 0.2 = 0.12, −(−1.2 − 0.7 + 0.2) = 1.7 (flat part),
        // 0.4·0.5 + 0.7·0.5 + 0.2 = 0.75.
        let x = vec![vec![0.5, 0.4], vec![-3.0, 1.0], vec![0.5, -0.5]];
        let labels = [1, 0, 1];
        for penalty in [
            WeightPenalty::SquaredNorm,
            WeightPenalty::HalfSquaredNorm,
            WeightPenalty::None,
        ] {
            let model = LinearSvm::new(2, 2.5, penalty).unwrap();
            check_gradients(&model, &params, &x, &labels);
            check_regulariser(&model, &params);
        }
    }

    #[test]
    fn losses_and_penalties_by_hand() {
        let model = LinearSvm::new(2, 2.5, WeightPenalty::SquaredNorm).unwrap();
        let half = LinearSvm::new(2, 2.5, WeightPenalty::HalfSquaredNorm).unwrap();
        let params = [0.4, -0.7, 0.2];
        let mut scratch = [0.0];
        let g = model.backward(&params, &[0.5, 0.4], 1, &mut scratch);
        assert!((g.loss - 2.5 * 0.88).abs() < 1e-14);
        assert_eq!(
            model.backward(&params, &[-3.0, 1.0], 0, &mut scratch).loss,
            0.0
        );
        assert!((model.regulariser(&params) - 0.65).abs() < 1e-15);
        assert!((half.regulariser(&params) - 0.325).abs() < 1e-15);
        let plain = LinearSvm::new(2, 2.5, WeightPenalty::None).unwrap();
        assert_eq!(plain.regulariser(&params), 0.0);
        let mut grad = [1.0, 2.0, 3.0];
        plain.add_regulariser_gradient(&params, &mut grad);
        assert_eq!(grad, [1.0, 2.0, 3.0]);
        assert_eq!(model.predict(&params, &[-3.0, 1.0], &mut scratch), 0);
        assert_eq!(model.predict(&params, &[0.5, -0.5], &mut scratch), 1);
    }

    #[test]
    fn constructor_rejects_bad_parameters() {
        for alpha in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            let msg = LinearSvm::new(2, alpha, WeightPenalty::SquaredNorm)
                .unwrap_err()
                .to_string();
            assert!(msg.starts_with("invalid alpha"), "{msg}");
        }
        assert!(LinearSvm::new(0, 1.0, WeightPenalty::SquaredNorm).is_err());
    }
}
