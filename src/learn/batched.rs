//! DP-SGD's clipped gradient sum for a batch at the cost of its matrix products.
//!
//! For a dense layer with input a_i and output gradient δ_i, example i's weight gradient is the
//! outer product a_i δ_iᵀ (bias folded in as a constant-1 input), whose norm is
//! ‖δ_i‖·√(‖a_i‖² + 1). So the per-example norms need only the forward activations and the
//! back-propagated δ's of the batch, and the clipped sum over the batch is one product per
//! layer: Σ_i c_i a_i δ_iᵀ = Aᵀ diag(c) Δ. Per-example gradients are never formed.
//!
//! Every product goes through [`gemm_acc`], whose per-element order is fixed, so results do not
//! depend on threads or the CPU. Large batches go in waves of [`WAVE`] rows whose sums are
//! added in order.

use super::dense::{
    axpy, clip_factor, norm_sq, sigmoid_cross_entropy, softmax_cross_entropy, Dense,
};
use super::gemm::{gemm_acc, Operand};
use super::mlp::Activation;
use rayon::prelude::*;

/// Rows of a batch processed at once (bounds memory on large Poisson batches).
const WAVE: usize = 1024;
/// Examples per parallel task when computing clip factors.
const NORM_CHUNK: usize = 32;

/// The loss on the last layer's outputs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Head {
    /// Softmax cross-entropy over the outputs (one per class).
    Softmax,
    /// Binary cross-entropy of one output through the sigmoid (class 1 positive).
    Sigmoid,
    /// α·max(0, 1 − y·z) on one output, y = ±1 for class 1 / 0; the subgradient at margin 1
    /// is taken as 0.
    Hinge { alpha: f64 },
}

/// A model as the batched engine sees it: dense layers in a flat parameter vector with an
/// activation after each hidden one, and a loss head.
#[derive(Clone, Debug, PartialEq)]
pub struct Network {
    pub(crate) layers: Vec<Dense>,
    pub(crate) activation: Activation,
    pub(crate) head: Head,
}

impl Head {
    /// Overwrites `out` (one example's outputs) with ∂ℓ/∂out and returns ℓ.
    fn loss_and_gradient(self, out: &mut [f64], label: usize) -> f64 {
        match self {
            Head::Softmax => softmax_cross_entropy(out, label),
            Head::Sigmoid => sigmoid_cross_entropy(out, label),
            Head::Hinge { alpha } => {
                let y = if label == 1 { 1.0 } else { -1.0 };
                let margin = y * out[0];
                out[0] = if margin < 1.0 { -alpha * y } else { 0.0 };
                alpha * (1.0 - margin).max(0.0)
            }
        }
    }
}

/// Buffers reused across steps, so no step allocates once the largest wave has been seen.
#[derive(Default)]
pub(crate) struct BatchWork {
    /// Per layer, its input for every row of the wave (the first is the gathered x).
    inputs: Vec<Vec<f64>>,
    /// Per layer, ∂ℓ/∂(its output) for every row (the last starts as the outputs).
    deltas: Vec<Vec<f64>>,
    scale: Vec<f64>,
}

impl Network {
    /// Writes Σ_{i ∈ batch} clip_C(∇ℓ_i) into `total` (C = `clip`, or no clipping) and
    /// returns Σ ℓ_i. `x` holds the examples row after row, `d` values each.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn clipped_sum(
        &self,
        params: &[f64],
        x: &[f64],
        labels: &[usize],
        batch: &[usize],
        clip: Option<f64>,
        work: &mut BatchWork,
        total: &mut [f64],
    ) -> f64 {
        total.fill(0.0);
        batch
            .chunks(WAVE)
            .map(|wave| self.add_wave(params, x, labels, wave, clip, work, total))
            .sum()
    }

    #[allow(clippy::too_many_arguments)]
    fn add_wave(
        &self,
        params: &[f64],
        x: &[f64],
        labels: &[usize],
        rows: &[usize],
        clip: Option<f64>,
        work: &mut BatchWork,
        total: &mut [f64],
    ) -> f64 {
        let (b, depth) = (rows.len(), self.layers.len());
        work.inputs.resize_with(depth, Vec::new);
        work.deltas.resize_with(depth, Vec::new);
        let d = self.layers[0].inputs;
        let first = &mut work.inputs[0];
        first.clear();
        for &i in rows {
            first.extend_from_slice(&x[i * d..(i + 1) * d]);
        }
        // Forward: each layer's output starts at its bias, then gains input·W.
        for (l, layer) in self.layers.iter().enumerate() {
            let (w, bias) = layer.weights_and_bias(params);
            let (before, after) = work.inputs.split_at_mut(l + 1);
            let out = match after.first_mut() {
                Some(next) => next,
                None => &mut work.deltas[depth - 1],
            };
            out.clear();
            for _ in 0..b {
                out.extend_from_slice(bias);
            }
            gemm_acc(
                b,
                layer.outputs,
                layer.inputs,
                Operand::Rows(&before[l]),
                Operand::Rows(w),
                out,
            );
            if l + 1 < depth {
                match self.activation {
                    Activation::Relu => out.iter_mut().for_each(|z| *z = z.max(0.0)),
                    Activation::Tanh => out.iter_mut().for_each(|z| *z = libm::tanh(*z)),
                }
            }
        }
        let outputs = self.layers[depth - 1].outputs;
        let loss: f64 = work.deltas[depth - 1]
            .chunks_exact_mut(outputs)
            .zip(rows)
            .map(|(out, &i)| self.head.loss_and_gradient(out, labels[i]))
            .sum();
        // Backward: δ_{l−1} = (δ_l·W_lᵀ) ⊙ activation′.
        for l in (1..depth).rev() {
            let layer = &self.layers[l];
            let (w, _) = layer.weights_and_bias(params);
            let (lower, upper) = work.deltas.split_at_mut(l);
            let below = &mut lower[l - 1];
            below.clear();
            below.resize(b * layer.inputs, 0.0);
            gemm_acc(
                b,
                layer.inputs,
                layer.outputs,
                Operand::Rows(&upper[0]),
                Operand::Transposed(w),
                below,
            );
            let acts = &work.inputs[l];
            match self.activation {
                // A select, not a conditional store: it vectorises, and half the units
                // being off would mispredict a branch.
                Activation::Relu => below
                    .iter_mut()
                    .zip(acts)
                    .for_each(|(g, &a)| *g = if a > 0.0 { *g } else { 0.0 }),
                Activation::Tanh => below
                    .iter_mut()
                    .zip(acts)
                    .for_each(|(g, &a)| *g *= 1.0 - a * a),
            }
        }
        // Clip factors from the norms: ‖∇ℓ_i‖² = Σ_l (‖a_i‖² + 1)·‖δ_i‖² over the layers.
        work.scale.clear();
        work.scale.resize(b, 1.0);
        if let Some(c) = clip {
            let (inputs, deltas) = (&work.inputs, &work.deltas);
            let factor = |i: usize| {
                let norm_sq: f64 = self
                    .layers
                    .iter()
                    .enumerate()
                    .map(|(l, layer)| {
                        let a = &inputs[l][i * layer.inputs..(i + 1) * layer.inputs];
                        let g = &deltas[l][i * layer.outputs..(i + 1) * layer.outputs];
                        Dense::gradient_norm_sq(norm_sq(a), g)
                    })
                    .sum();
                clip_factor(norm_sq, c)
            };
            // Each example's factor is computed alone, so splitting the batch changes nothing.
            let per_example: usize = self.layers.iter().map(|l| l.inputs + l.outputs).sum();
            if b * per_example >= 1 << 18 {
                work.scale
                    .par_chunks_mut(NORM_CHUNK)
                    .enumerate()
                    .for_each(|(chunk, scales)| {
                        for (j, scale) in scales.iter_mut().enumerate() {
                            *scale = factor(chunk * NORM_CHUNK + j);
                        }
                    });
            } else {
                for (i, scale) in work.scale.iter_mut().enumerate() {
                    *scale = factor(i);
                }
            }
        }
        // The clipped sum, one product per layer: Aᵀ·(diag(c)·Δ), and the bias Σ_i c_i δ_i.
        for (l, layer) in self.layers.iter().enumerate() {
            let delta = &mut work.deltas[l];
            if clip.is_some() {
                for (g, &s) in delta.chunks_exact_mut(layer.outputs).zip(&work.scale) {
                    g.iter_mut().for_each(|v| *v *= s);
                }
            }
            let (gw, gb) = total[layer.offset..layer.offset + layer.len()]
                .split_at_mut(layer.inputs * layer.outputs);
            gemm_acc(
                layer.inputs,
                layer.outputs,
                b,
                Operand::Transposed(&work.inputs[l]),
                Operand::Rows(delta),
                gw,
            );
            for g in delta.chunks_exact(layer.outputs) {
                axpy(1.0, g, gb);
            }
        }
        loss
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::learn::add_clipped_gradient;
    use crate::learn::{LinearSvm, Logistic, Mlp, Model, WeightPenalty};
    use crate::rng::{normal, stream};

    /// The clipped sum one example at a time through the model's own backward pass.
    fn per_example(
        model: &dyn Model,
        params: &[f64],
        x: &[f64],
        labels: &[usize],
        batch: &[usize],
        clip: Option<f64>,
    ) -> (Vec<f64>, f64) {
        let d = model.n_features();
        let mut acc = vec![0.0; params.len()];
        let mut scratch = vec![0.0; model.scratch_len()];
        let loss = batch
            .iter()
            .map(|&i| {
                let row = &x[i * d..(i + 1) * d];
                add_clipped_gradient(model, params, row, labels[i], clip, &mut scratch, &mut acc)
            })
            .sum();
        (acc, loss)
    }

    #[test]
    fn the_clipped_sum_equals_the_per_example_computation() {
        let models: Vec<Box<dyn Model>> = vec![
            Box::new(Logistic::new(7, 3).unwrap()),
            Box::new(Logistic::binary(7).unwrap()),
            Box::new(LinearSvm::new(7, 0.7, WeightPenalty::SquaredNorm).unwrap()),
            Box::new(Mlp::new(&[7, 9, 3], Activation::Relu).unwrap()),
            Box::new(Mlp::new(&[7, 12, 5, 3], Activation::Relu).unwrap()),
            Box::new(Mlp::new(&[7, 6, 3], Activation::Tanh).unwrap()),
        ];
        let n = 1500;
        let mut rng = stream(11, &[]);
        let x: Vec<f64> = (0..n * 7).map(|_| normal(&mut rng)).collect();
        let labels: Vec<usize> = (0..n).map(|i| (i * 7 + i / 3) % 3).collect();
        // A batch with repeats, larger than a wave, and a small one.
        let big: Vec<usize> = (0..1300).map(|i| (i * 37) % n).collect();
        let small: Vec<usize> = vec![4, 4, 9, 0];
        for model in &models {
            let net = model.network().expect("a dense model");
            let labels: Vec<usize> = labels.iter().map(|&y| y % model.n_classes()).collect();
            let params: Vec<f64> = (0..model.n_params())
                .map(|_| 0.8 * normal(&mut rng))
                .collect();
            for batch in [&big, &small] {
                for clip in [None, Some(0.05), Some(0.5), Some(50.0)] {
                    let (want, want_loss) =
                        per_example(model.as_ref(), &params, &x, &labels, batch, clip);
                    let mut got = vec![f64::NAN; params.len()];
                    let loss = net.clipped_sum(
                        &params,
                        &x,
                        &labels,
                        batch,
                        clip,
                        &mut BatchWork::default(),
                        &mut got,
                    );
                    let scale = want.iter().fold(1.0_f64, |m, v| m.max(v.abs()));
                    for (k, (g, w)) in got.iter().zip(&want).enumerate() {
                        assert!(
                            (g - w).abs() <= 1e-10 * scale,
                            "{:?} clip {clip:?} coordinate {k}: {g} vs {w}",
                            net.layers
                        );
                    }
                    assert!((loss - want_loss).abs() <= 1e-10 * want_loss.abs().max(1.0));
                }
            }
        }
    }

    #[test]
    fn clip_factors_computed_in_parallel_agree_with_the_per_example_sum() {
        // 400 × (201 + 300 + 301 + 10) ≥ 2¹⁸: the parallel branch.
        let model = Mlp::new(&[200, 300, 10], Activation::Relu).unwrap();
        let net = model.network().unwrap();
        let n = 500;
        let mut rng = stream(12, &[]);
        let x: Vec<f64> = (0..n * 200).map(|_| normal(&mut rng)).collect();
        let labels: Vec<usize> = (0..n).map(|i| i % 10).collect();
        let params: Vec<f64> = (0..model.n_params())
            .map(|_| 0.1 * normal(&mut rng))
            .collect();
        let batch: Vec<usize> = (0..400).map(|i| (i * 7) % n).collect();
        let (want, _) = per_example(&model, &params, &x, &labels, &batch, Some(0.5));
        let run = |threads| {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let mut got = vec![0.0; params.len()];
            pool.install(|| {
                net.clipped_sum(
                    &params,
                    &x,
                    &labels,
                    &batch,
                    Some(0.5),
                    &mut BatchWork::default(),
                    &mut got,
                )
            });
            got
        };
        let got = run(1);
        assert_eq!(got, run(3));
        let scale = want.iter().fold(1.0_f64, |m, v| m.max(v.abs()));
        for (k, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!((g - w).abs() <= 1e-10 * scale, "coordinate {k}: {g} vs {w}");
        }
    }

    #[test]
    fn every_clipped_example_has_norm_at_most_c() {
        // One example per batch: the sum is that example's clipped gradient.
        let model = Mlp::new(&[5, 8, 4], Activation::Relu).unwrap();
        let net = model.network().unwrap();
        let mut rng = stream(3, &[]);
        let x: Vec<f64> = (0..40 * 5).map(|_| 3.0 * normal(&mut rng)).collect();
        let labels: Vec<usize> = (0..40).map(|i| i % 4).collect();
        let params: Vec<f64> = (0..model.n_params()).map(|_| normal(&mut rng)).collect();
        let mut g = vec![0.0; params.len()];
        for i in 0..40 {
            net.clipped_sum(
                &params,
                &x,
                &labels,
                &[i],
                Some(0.3),
                &mut BatchWork::default(),
                &mut g,
            );
            assert!(norm_sq(&g).sqrt() <= 0.3, "example {i}");
        }
    }
}
