//! A multilayer perceptron classifier: dense layers with ReLU or tanh between them and a softmax
//! cross-entropy loss on the last.

use super::dense::{argmax, norm_sq, softmax_cross_entropy, Dense};
use super::model::{ExampleGradient, Model};
use super::{Head, Network};
use crate::error::{Error, Result};
use crate::rng::normal;
use rand::RngCore;

/// The nonlinearity after each hidden layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Activation {
    /// max(0, z), with derivative 0 at z = 0; He initialisation.
    Relu,
    /// tanh z; Glorot initialisation.
    Tanh,
}

/// An MLP with layer sizes `[inputs, hidden…, classes]`, e.g. `[64, 128, 10]`. Parameters:
/// layer after layer, each its weights input-major (row j: the weights from input j to every
/// output), then its biases.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mlp {
    layers: Vec<Dense>,
    activation: Activation,
    /// (first index, size) of each hidden layer's block. The scratch holds the hidden
    /// activations (one block per layer, consecutive), then their gradients ∂ℓ/∂z (the same
    /// blocks), then the logits, overwritten by ∂ℓ/∂logits.
    hidden: Vec<(usize, usize)>,
    hidden_total: usize,
}

impl Mlp {
    /// `sizes` = [inputs, hidden…, classes]: at least one hidden layer, every size ≥ 1 and at
    /// least 2 classes.
    pub fn new(sizes: &[usize], activation: Activation) -> Result<Self> {
        let shape = || {
            sizes
                .iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join("-")
        };
        if sizes.len() < 3 || sizes.contains(&0) {
            return Err(Error::invalid(
                "sizes",
                shape(),
                "inputs, at least one hidden layer and the classes, each >= 1",
            ));
        }
        if sizes[sizes.len() - 1] < 2 {
            return Err(Error::invalid("sizes", shape(), "at least 2 classes last"));
        }
        let mut offset = 0;
        let layers = sizes
            .windows(2)
            .map(|io| {
                let layer = Dense {
                    inputs: io[0],
                    outputs: io[1],
                    offset,
                };
                offset += layer.len();
                layer
            })
            .collect();
        let mut start = 0;
        let hidden = sizes[1..sizes.len() - 1]
            .iter()
            .map(|&len| {
                start += len;
                (start - len, len)
            })
            .collect();
        Ok(Mlp {
            layers,
            activation,
            hidden,
            hidden_total: start,
        })
    }

    pub fn activation(&self) -> Activation {
        self.activation
    }

    fn output(&self) -> &Dense {
        &self.layers[self.layers.len() - 1]
    }

    /// The input of layer `i`: x for the first, the previous layer's activations otherwise.
    fn layer_input<'a>(&self, i: usize, x: &'a [f64], acts: &'a [f64]) -> &'a [f64] {
        match i.checked_sub(1) {
            None => x,
            Some(h) => {
                let (start, len) = self.hidden[h];
                &acts[start..start + len]
            }
        }
    }

    /// Fills the hidden activations and the logits.
    fn forward(&self, params: &[f64], x: &[f64], acts: &mut [f64], logits: &mut [f64]) {
        for (i, &(start, len)) in self.hidden.iter().enumerate() {
            let (done, rest) = acts.split_at_mut(start);
            let out = &mut rest[..len];
            self.layers[i].forward(params, self.layer_input(i, x, done), out);
            match self.activation {
                Activation::Relu => out.iter_mut().for_each(|z| *z = z.max(0.0)),
                Activation::Tanh => out.iter_mut().for_each(|z| *z = libm::tanh(*z)),
            }
        }
        let last = self.layers.len() - 1;
        self.output()
            .forward(params, self.layer_input(last, x, acts), logits);
    }
}

impl Model for Mlp {
    fn n_features(&self) -> usize {
        self.layers[0].inputs
    }
    fn n_classes(&self) -> usize {
        self.output().outputs
    }
    fn n_params(&self) -> usize {
        self.layers.iter().map(Dense::len).sum()
    }
    fn scratch_len(&self) -> usize {
        2 * self.hidden_total + self.n_classes()
    }
    /// Weights N(0, 2/fan_in) (He) for ReLU, N(0, 2/(fan_in + fan_out)) (Glorot) for tanh,
    /// drawn layer after layer in storage order; biases 0.
    fn init(&self, rng: &mut dyn RngCore) -> Vec<f64> {
        let mut params = Vec::with_capacity(self.n_params());
        for layer in &self.layers {
            let var = match self.activation {
                Activation::Relu => 2.0 / layer.inputs as f64,
                Activation::Tanh => 2.0 / (layer.inputs + layer.outputs) as f64,
            };
            let sd = var.sqrt();
            params.extend((0..layer.inputs * layer.outputs).map(|_| sd * normal(rng)));
            params.extend(std::iter::repeat_n(0.0, layer.outputs));
        }
        params
    }
    fn backward(
        &self,
        params: &[f64],
        x: &[f64],
        label: usize,
        scratch: &mut [f64],
    ) -> ExampleGradient {
        let (acts, rest) = scratch.split_at_mut(self.hidden_total);
        let (deltas, logits) = rest.split_at_mut(self.hidden_total);
        self.forward(params, x, acts, logits);
        let loss = softmax_cross_entropy(logits, label);
        let last = self.layers.len() - 1;
        // Each layer's gradient is (input) ⊗ δ plus δ for the bias, so its norm needs only
        // ‖input‖ and ‖δ‖ (see Dense::gradient_norm_sq).
        let mut norm = Dense::gradient_norm_sq(norm_sq(self.layer_input(last, x, acts)), logits);
        // Back through the hidden layers: δᵢ = (W_{i+1}·δ_{i+1}) ⊙ activation′(zᵢ).
        for i in (0..last).rev() {
            let (start, len) = self.hidden[i];
            let (lower, upper) = deltas.split_at_mut(start + len);
            let delta = &mut lower[start..];
            let upstream: &[f64] = if i + 1 == last {
                logits
            } else {
                &upper[..self.hidden[i + 1].1]
            };
            self.layers[i + 1].backward_input(params, upstream, delta);
            let a = &acts[start..start + len];
            match self.activation {
                Activation::Relu => {
                    for (d, &a) in delta.iter_mut().zip(a) {
                        if a <= 0.0 {
                            *d = 0.0;
                        }
                    }
                }
                Activation::Tanh => {
                    for (d, &a) in delta.iter_mut().zip(a) {
                        *d *= 1.0 - a * a;
                    }
                }
            }
            norm += Dense::gradient_norm_sq(norm_sq(self.layer_input(i, x, acts)), delta);
        }
        ExampleGradient {
            loss,
            norm_sq: norm,
        }
    }
    fn network(&self) -> Option<Network> {
        Some(Network {
            layers: self.layers.clone(),
            activation: self.activation,
            head: Head::Softmax,
        })
    }
    fn add_gradient(&self, x: &[f64], scale: f64, scratch: &[f64], acc: &mut [f64]) {
        let (acts, rest) = scratch.split_at(self.hidden_total);
        let (deltas, logits) = rest.split_at(self.hidden_total);
        for (i, layer) in self.layers.iter().enumerate() {
            let delta = match self.hidden.get(i) {
                Some(&(start, len)) => &deltas[start..start + len],
                None => logits,
            };
            layer.add_gradient(self.layer_input(i, x, acts), delta, scale, acc);
        }
    }
    fn predict(&self, params: &[f64], x: &[f64], scratch: &mut [f64]) -> usize {
        let (acts, rest) = scratch.split_at_mut(self.hidden_total);
        let logits = &mut rest[self.hidden_total..];
        self.forward(params, x, acts, logits);
        argmax(logits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::learn::model::testing::check_gradients;
    use crate::rng::{normal, stream};

    #[test]
    fn gradients_match_finite_differences() {
        let mut rng = stream(2, &[]);
        for (sizes, activation) in [
            (vec![3, 5, 2], Activation::Tanh),
            (vec![4, 6, 5, 3], Activation::Tanh),
            (vec![3, 5, 2], Activation::Relu),
            (vec![4, 6, 5, 3], Activation::Relu),
        ] {
            let model = Mlp::new(&sizes, activation).unwrap();
            // Non-zero biases too, so every parameter's derivative is exercised.
            let params: Vec<f64> = (0..model.n_params()).map(|_| normal(&mut rng)).collect();
            let x: Vec<Vec<f64>> = (0..4)
                .map(|_| (0..sizes[0]).map(|_| normal(&mut rng)).collect())
                .collect();
            let labels: Vec<usize> = (0..4).map(|i| i % model.n_classes()).collect();
            check_gradients(&model, &params, &x, &labels);
        }
    }

    #[test]
    fn forward_pass_matches_a_hand_computation() {
        // 2 inputs, 2 tanh hidden units, 2 classes.
        let model = Mlp::new(&[2, 2, 2], Activation::Tanh).unwrap();
        // W1 input-major [[1, -1], [0.5, 2]], b1 [0.1, -0.2], W2 [[1, 0], [-1, 3]], b2 [0, 0.5].
        let params = [
            1.0, -1.0, 0.5, 2.0, 0.1, -0.2, 1.0, 0.0, -1.0, 3.0, 0.0, 0.5,
        ];
        let x = [0.3, -0.4];
        let h = [
            libm::tanh(0.3 * 1.0 + -0.4 * 0.5 + 0.1f64),
            libm::tanh(-0.3 + -0.4 * 2.0 - 0.2f64),
        ];
        let logits = [h[0] - h[1], 3.0 * h[1] + 0.5];
        let lse = libm::log(libm::exp(logits[0]) + libm::exp(logits[1]));
        let mut scratch = vec![0.0; model.scratch_len()];
        let loss = model.backward(&params, &x, 1, &mut scratch).loss;
        assert!((loss - (lse - logits[1])).abs() < 1e-14, "{loss}");
        let expected = usize::from(logits[1] > logits[0]);
        assert_eq!(model.predict(&params, &x, &mut scratch), expected);
    }

    #[test]
    fn init_has_the_he_and_glorot_scales() {
        let mut rng = stream(3, &[]);
        let (d, h, k) = (200, 300, 10);
        for (activation, var) in [
            (Activation::Relu, 2.0 / d as f64),
            (Activation::Tanh, 2.0 / (d + h) as f64),
        ] {
            let model = Mlp::new(&[d, h, k], activation).unwrap();
            let params = model.init(&mut rng);
            assert_eq!(params.len(), model.n_params());
            let w1 = &params[..d * h];
            let v = w1.iter().map(|w| w * w).sum::<f64>() / w1.len() as f64;
            assert!((v / var - 1.0).abs() < 0.02, "{activation:?}: {v} vs {var}");
            assert!(params[d * h..(d + 1) * h].iter().all(|&b| b == 0.0));
        }
    }

    #[test]
    fn constructor_rejects_bad_shapes() {
        for sizes in [vec![4, 3], vec![4, 0, 3], vec![4, 5, 1], vec![]] {
            let msg = Mlp::new(&sizes, Activation::Relu).unwrap_err().to_string();
            assert!(msg.starts_with("invalid sizes"), "{msg}");
        }
    }
}
