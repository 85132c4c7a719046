//! Multinomial logistic (softmax) regression with a bias: ℓ(θ; x, y) = −log softmax(Wᵀx + b)_y.

use super::dense::{argmax, norm_sq, softmax_cross_entropy, Dense};
use super::model::{ExampleGradient, Model};
use super::{Activation, Head, Network};
use crate::error::{Error, Result};
use rand::RngCore;

/// Softmax regression on `n_features` inputs and `n_classes` ≥ 2 classes. Parameters: the
/// weights input-major (row j: the weights of feature j for every class), then the biases.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Logistic {
    layer: Dense,
}

impl Logistic {
    pub fn new(n_features: usize, n_classes: usize) -> Result<Self> {
        if n_features == 0 {
            return Err(Error::invalid("n_features", 0, "an integer >= 1"));
        }
        if n_classes < 2 {
            return Err(Error::invalid("n_classes", n_classes, "an integer >= 2"));
        }
        Ok(Logistic {
            layer: Dense {
                inputs: n_features,
                outputs: n_classes,
                offset: 0,
            },
        })
    }
}

impl Model for Logistic {
    fn n_features(&self) -> usize {
        self.layer.inputs
    }
    fn n_classes(&self) -> usize {
        self.layer.outputs
    }
    fn n_params(&self) -> usize {
        self.layer.len()
    }
    /// The logits, then ∂ℓ/∂logits.
    fn scratch_len(&self) -> usize {
        self.layer.outputs
    }
    /// Zeros: the loss is convex, so no symmetry needs breaking.
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
        self.layer.forward(params, x, scratch);
        let loss = softmax_cross_entropy(scratch, label);
        ExampleGradient {
            loss,
            norm_sq: Dense::gradient_norm_sq(norm_sq(x), scratch),
        }
    }
    fn add_gradient(&self, x: &[f64], scale: f64, scratch: &[f64], acc: &mut [f64]) {
        self.layer.add_gradient(x, scratch, scale, acc);
    }
    fn predict(&self, params: &[f64], x: &[f64], scratch: &mut [f64]) -> usize {
        self.layer.forward(params, x, scratch);
        argmax(scratch)
    }
    fn network(&self) -> Option<Network> {
        Some(Network {
            layers: vec![self.layer],
            // No hidden layer: the activation is never applied.
            activation: Activation::Relu,
            head: Head::Softmax,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::learn::model::testing::check_gradients;
    use crate::rng::{normal, stream};

    #[test]
    fn gradients_match_finite_differences() {
        let mut rng = stream(1, &[]);
        for (d, k) in [(1, 2), (5, 3), (9, 7)] {
            let model = Logistic::new(d, k).unwrap();
            let params: Vec<f64> = (0..model.n_params()).map(|_| normal(&mut rng)).collect();
            let x: Vec<Vec<f64>> = (0..4)
                .map(|_| (0..d).map(|_| 2.0 * normal(&mut rng)).collect())
                .collect();
            let labels: Vec<usize> = (0..4).map(|i| i % k).collect();
            check_gradients(&model, &params, &x, &labels);
        }
    }

    #[test]
    fn loss_is_the_log_softmax_and_stable_for_huge_logits() {
        let model = Logistic::new(2, 3).unwrap();
        // Weights for features 0 and 1, then biases.
        let params = [1.0, -2.0, 0.5, 0.0, 3.0, -1.0, 0.1, 0.2, 0.3];
        let x = [0.7, -1.3];
        let logits = [0.8, -5.1, 1.95];
        let lse = logits.iter().map(|z: &f64| z.exp()).sum::<f64>().ln();
        let mut scratch = vec![0.0; 3];
        for (label, z) in logits.iter().enumerate() {
            let loss = model.backward(&params, &x, label, &mut scratch).loss;
            assert!((loss - (lse - z)).abs() < 1e-13);
        }
        assert_eq!(model.predict(&params, &x, &mut scratch), 2);
        // Logits of ±1e5: a naive softmax overflows; the loss is exactly the logit gap.
        let big = [1e5, -1e5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0];
        let g = model.backward(&big, &[1.0, 0.0], 1, &mut scratch);
        assert_eq!(g.loss, 2e5);
        assert!(g.norm_sq.is_finite());
    }

    #[test]
    fn constructor_rejects_bad_shapes() {
        assert!(Logistic::new(0, 2).is_err());
        let msg = Logistic::new(3, 1).unwrap_err().to_string();
        assert!(msg.contains("n_classes"), "{msg}");
    }
}
