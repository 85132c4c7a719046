//! Logistic regression with a bias: multinomial, ℓ(θ; x, y) = −log softmax(Wᵀx + b)_y, or
//! binary with one output, ℓ = −log σ(±(wᵀx + b)) (spec 001's 123→1 Adult model).

use super::dense::{argmax, norm_sq, sigmoid_cross_entropy, softmax_cross_entropy, Dense};
use super::model::{ExampleGradient, Model};
use super::{Activation, Head, Network};
use crate::error::{Error, Result};
use rand::RngCore;

/// Softmax regression on `n_features` inputs and `n_classes` ≥ 2 classes. Parameters: the
/// weights input-major (row j: the weights of feature j for every class), then the biases.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Logistic {
    layer: Dense,
    /// One output through the sigmoid (two classes) instead of a softmax.
    binary: bool,
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
            binary: false,
        })
    }

    /// Binary logistic regression: one weight per feature and a bias, the sigmoid
    /// cross-entropy; class 1 is the positive class.
    pub fn binary(n_features: usize) -> Result<Self> {
        let mut model = Logistic::new(n_features, 2)?;
        model.layer.outputs = 1;
        model.binary = true;
        Ok(model)
    }

    fn head(&self) -> Head {
        if self.binary {
            Head::Sigmoid
        } else {
            Head::Softmax
        }
    }
}

impl Model for Logistic {
    fn n_features(&self) -> usize {
        self.layer.inputs
    }
    fn n_classes(&self) -> usize {
        if self.binary {
            2
        } else {
            self.layer.outputs
        }
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
        let loss = if self.binary {
            sigmoid_cross_entropy(scratch, label)
        } else {
            softmax_cross_entropy(scratch, label)
        };
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
        if self.binary {
            usize::from(scratch[0] >= 0.0)
        } else {
            argmax(scratch)
        }
    }
    fn network(&self) -> Option<Network> {
        Some(Network {
            layers: vec![self.layer],
            // No hidden layer: the activation is never applied.
            activation: Activation::Relu,
            head: self.head(),
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
        let lse = libm::log(logits.iter().map(|z: &f64| libm::exp(*z)).sum::<f64>());
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
    fn binary_model_is_the_sigmoid_cross_entropy() {
        let mut rng = stream(2, &[]);
        let model = Logistic::binary(4).unwrap();
        assert_eq!((model.n_params(), model.n_classes()), (5, 2));
        let params: Vec<f64> = (0..5).map(|_| normal(&mut rng)).collect();
        let x: Vec<Vec<f64>> = (0..6)
            .map(|_| (0..4).map(|_| 2.0 * normal(&mut rng)).collect())
            .collect();
        let labels: Vec<usize> = (0..6).map(|i| i % 2).collect();
        check_gradients(&model, &params, &x, &labels);
        let mut scratch = vec![0.0; model.scratch_len()];
        for (row, &y) in x.iter().zip(&labels) {
            let z = params[..4].iter().zip(row).map(|(w, v)| w * v).sum::<f64>() + params[4];
            let p = 1.0 / (1.0 + libm::exp(-z));
            let want = if y == 1 {
                -libm::log(p)
            } else {
                -libm::log(1.0 - p)
            };
            let got = model.backward(&params, row, y, &mut scratch);
            assert!((got.loss - want).abs() < 1e-12, "{} vs {want}", got.loss);
            let norm_sq = (p - y as f64).powi(2) * (row.iter().map(|v| v * v).sum::<f64>() + 1.0);
            assert!((got.norm_sq - norm_sq).abs() < 1e-12);
            assert_eq!(
                model.predict(&params, row, &mut scratch),
                usize::from(z >= 0.0)
            );
        }
        // A logit of ±800: e^{800} overflows, the loss does not.
        let g = model.backward(
            &[800.0, 0.0, 0.0, 0.0, 0.0],
            &[1.0, 0.0, 0.0, 0.0],
            0,
            &mut scratch,
        );
        assert_eq!(g.loss, 800.0);
        assert!(g.norm_sq.is_finite());
    }

    #[test]
    fn constructor_rejects_bad_shapes() {
        assert!(Logistic::new(0, 2).is_err());
        let msg = Logistic::new(3, 1).unwrap_err().to_string();
        assert!(msg.contains("n_classes"), "{msg}");
    }
}
