//! Initial parameters chosen explicitly by the caller, apart from each model's own
//! [`Model::init`] (which earlier studies' results depend on and which therefore stays as it
//! is). Spec 001's DP-SGD tasks ("Initialisation") use zeros for the linear models and the
//! DPareto release's Xavier-normal draw for the MLPs.

use super::model::Model;
use crate::error::{Error, Result};
use crate::rng::normal;
use rand::RngCore;

/// How a run's initial parameters are drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Init {
    /// θ = 0: what spec 001's algorithms write (w ← 0), used for its linear models (logistic
    /// regression, the linear SVM), whose losses are convex so no symmetry needs breaking.
    /// Draws nothing.
    Zeros,
    /// Spec 001's "Xavier-normal" **[code]**: every weight and every bias is drawn from
    /// N(0, s²) with s = √(6/(fan_in + fan_out)), as the DPareto release does
    /// (`_xavier_initialize_params`, MXNet's `random_normal` with that `scale`; note that this
    /// s is the bound of Glorot's *uniform* init used as a normal standard deviation, so the
    /// variance is three times Glorot-normal's, and we follow the spec and the release).
    /// The release draws each parameter tensor with its own shape: a layer's weight matrix is
    /// fan_in × fan_out, so s = √(6/(fan_in + fan_out)), and its bias is a 1 × fan_out
    /// matrix, so s = √(6/(1 + fan_out)). Draws are made layer after layer in storage order
    /// (weights input-major, then biases), one [`normal`] each. Needs a model of dense layers
    /// ([`Model::network`]).
    XavierNormal,
}

impl Init {
    pub fn name(self) -> &'static str {
        match self {
            Init::Zeros => "zeros",
            Init::XavierNormal => "xavier-normal",
        }
    }

    /// The standard deviations of a dense layer's weights and biases under
    /// [`Init::XavierNormal`]: √(6/(fan_in + fan_out)) and √(6/(1 + fan_out)).
    pub fn xavier_sd(fan_in: usize, fan_out: usize) -> (f64, f64) {
        (
            (6.0 / (fan_in + fan_out) as f64).sqrt(),
            (6.0 / (1 + fan_out) as f64).sqrt(),
        )
    }

    /// Initial parameters for `model`, drawn from `rng`.
    pub fn params<M: Model + ?Sized>(self, model: &M, rng: &mut dyn RngCore) -> Result<Vec<f64>> {
        let mut params = vec![0.0; model.n_params()];
        match self {
            Init::Zeros => {}
            Init::XavierNormal => {
                let network = model.network().ok_or_else(|| {
                    Error::invalid(
                        "init",
                        self.name(),
                        "`zeros` for a model that is not a stack of dense layers",
                    )
                })?;
                for layer in &network.layers {
                    let (sd_w, sd_b) = Self::xavier_sd(layer.inputs, layer.outputs);
                    let block = &mut params[layer.offset..layer.offset + layer.len()];
                    let (w, b) = block.split_at_mut(layer.inputs * layer.outputs);
                    w.iter_mut().for_each(|v| *v = sd_w * normal(rng));
                    b.iter_mut().for_each(|v| *v = sd_b * normal(rng));
                }
            }
        }
        Ok(params)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::learn::{Activation, LinearSvm, Logistic, Mlp, WeightPenalty};
    use crate::rng::stream;

    fn mean_sd(v: &[f64]) -> (f64, f64) {
        let n = v.len() as f64;
        let mean = v.iter().sum::<f64>() / n;
        let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
        (mean, var.sqrt())
    }

    /// Each layer's weights have sample sd √(6/(fan_in + fan_out)) and its biases
    /// √(6/(1 + fan_out)), mean 0 (spec 001's 784-128-64-10 and 784-1000-10 MLPs).
    #[test]
    fn xavier_normal_has_the_release_sd_per_layer() {
        for sizes in [&[784, 128, 64, 10][..], &[784, 1000, 10][..]] {
            let mlp = Mlp::new(sizes, Activation::Relu).unwrap();
            let params = Init::XavierNormal
                .params(&mlp, &mut stream(3, &[]))
                .unwrap();
            let mut offset = 0;
            for io in sizes.windows(2) {
                let (fan_in, fan_out) = (io[0], io[1]);
                let (w, rest) = params[offset..].split_at(fan_in * fan_out);
                let b = &rest[..fan_out];
                offset += (fan_in + 1) * fan_out;
                let (sd_w, sd_b) = Init::xavier_sd(fan_in, fan_out);
                assert_eq!(sd_w, (6.0 / (fan_in + fan_out) as f64).sqrt());
                let (mean, sd) = mean_sd(w);
                // The sample sd of k normals has relative sd ≈ 1/√(2k); allow 5 of those.
                let tol = 5.0 / (2.0 * w.len() as f64).sqrt();
                assert!(
                    (sd / sd_w - 1.0).abs() < tol,
                    "{sizes:?} {fan_in}-{fan_out}: {sd}"
                );
                assert!(mean.abs() < 5.0 * sd_w / (w.len() as f64).sqrt(), "{mean}");
                if fan_out >= 64 {
                    let (_, sd) = mean_sd(b);
                    let tol = 5.0 / (2.0 * b.len() as f64).sqrt();
                    assert!(
                        (sd / sd_b - 1.0).abs() < tol,
                        "bias {fan_out}: {sd} vs {sd_b}"
                    );
                }
            }
            assert_eq!(offset, params.len());
            assert!(params.iter().all(|v| v.is_finite() && *v != 0.0));
            // Reproducible from the stream, different for another one.
            let again = Init::XavierNormal
                .params(&mlp, &mut stream(3, &[]))
                .unwrap();
            assert_eq!(params, again);
            let other = Init::XavierNormal
                .params(&mlp, &mut stream(4, &[]))
                .unwrap();
            assert_ne!(params, other);
        }
    }

    #[test]
    fn zeros_are_exactly_zero_and_draw_nothing() {
        let models: Vec<Box<dyn Model>> = vec![
            Box::new(Logistic::binary(123).unwrap()),
            Box::new(LinearSvm::new(123, 1.0, WeightPenalty::None).unwrap()),
            Box::new(Mlp::new(&[4, 3, 2], Activation::Relu).unwrap()),
        ];
        for model in &models {
            let mut rng = stream(5, &[]);
            let p = Init::Zeros.params(model.as_ref(), &mut rng).unwrap();
            assert_eq!(p.len(), model.n_params());
            assert!(p.iter().all(|&v| v == 0.0 && v.is_sign_positive()));
            assert_eq!(rng.next_u64(), stream(5, &[]).next_u64(), "a draw was made");
        }
    }

    #[test]
    fn xavier_needs_dense_layers() {
        // Every model here has dense layers; a model without them is named in the error.
        struct Opaque;
        impl Model for Opaque {
            fn n_features(&self) -> usize {
                1
            }
            fn n_classes(&self) -> usize {
                2
            }
            fn n_params(&self) -> usize {
                1
            }
            fn scratch_len(&self) -> usize {
                0
            }
            fn init(&self, _: &mut dyn RngCore) -> Vec<f64> {
                vec![0.0]
            }
            fn backward(
                &self,
                _: &[f64],
                _: &[f64],
                _: usize,
                _: &mut [f64],
            ) -> crate::learn::ExampleGradient {
                crate::learn::ExampleGradient {
                    loss: 0.0,
                    norm_sq: 0.0,
                }
            }
            fn add_gradient(&self, _: &[f64], _: f64, _: &[f64], _: &mut [f64]) {}
            fn predict(&self, _: &[f64], _: &[f64], _: &mut [f64]) -> usize {
                0
            }
        }
        let msg = Init::XavierNormal
            .params(&Opaque, &mut stream(1, &[]))
            .unwrap_err()
            .to_string();
        assert!(msg.starts_with("invalid init = xavier-normal"), "{msg}");
        assert_eq!(
            Init::Zeros.params(&Opaque, &mut stream(1, &[])).unwrap(),
            [0.0]
        );
    }
}
