//! The arithmetic the models share: a fully connected layer inside a flat parameter vector,
//! softmax cross-entropy, and vector kernels written so the compiler can vectorise them.

/// `y += a·x`. Element-wise, so it vectorises without reassociating any sum.
#[inline]
pub(crate) fn axpy(a: f64, x: &[f64], y: &mut [f64]) {
    debug_assert_eq!(x.len(), y.len());
    for (yi, xi) in y.iter_mut().zip(x) {
        *yi += a * xi;
    }
}

/// Σ aᵢbᵢ with four running sums (a fixed order, so results never depend on threads): a
/// single running sum is one long chain of dependent additions.
#[inline]
pub(crate) fn dot(a: &[f64], b: &[f64]) -> f64 {
    debug_assert_eq!(a.len(), b.len());
    let (ca, cb) = (a.chunks_exact(4), b.chunks_exact(4));
    let tail: f64 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(x, y)| x * y)
        .sum();
    let mut acc = [0.0; 4];
    for (x, y) in ca.zip(cb) {
        for k in 0..4 {
            acc[k] += x[k] * y[k];
        }
    }
    (acc[0] + acc[2]) + (acc[1] + acc[3]) + tail
}

/// ‖a‖².
#[inline]
pub(crate) fn norm_sq(a: &[f64]) -> f64 {
    dot(a, a)
}

/// A fully connected layer `out = Wᵀx + b` stored at `offset` in a flat parameter vector:
/// the weights input-major (row j holds the weights from input j to every output), then the
/// biases. Input-major rows make the forward pass and the weight gradient axpy's over
/// contiguous rows, the two O(inputs·outputs) loops of a step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Dense {
    pub inputs: usize,
    pub outputs: usize,
    pub offset: usize,
}

impl Dense {
    /// The number of parameters: weights and biases.
    pub fn len(&self) -> usize {
        (self.inputs + 1) * self.outputs
    }

    pub(crate) fn weights_and_bias<'a>(&self, params: &'a [f64]) -> (&'a [f64], &'a [f64]) {
        params[self.offset..self.offset + self.len()].split_at(self.inputs * self.outputs)
    }

    /// `out = Wᵀx + b`, each output summed in input order. Outputs are taken in blocks held
    /// in registers through the whole input loop, so only the weights are read from memory.
    #[inline]
    pub fn forward(&self, params: &[f64], x: &[f64], out: &mut [f64]) {
        const BLOCK: usize = 8;
        let (w, b) = self.weights_and_bias(params);
        out.copy_from_slice(b);
        let blocked = self.outputs - self.outputs % BLOCK;
        for (start, out) in (0..blocked).step_by(BLOCK).zip(out.chunks_exact_mut(BLOCK)) {
            let mut acc = [0.0; BLOCK];
            acc.copy_from_slice(out);
            for (&xj, row) in x.iter().zip(w.chunks_exact(self.outputs)) {
                let row: &[f64; BLOCK] = row[start..start + BLOCK].try_into().unwrap();
                // `while`, not a range: the tests' build (opt-level 1) calls a range's `next`
                // per step here; the order of the operations is the same.
                let mut k = 0;
                while k < BLOCK {
                    acc[k] += xj * row[k];
                    k += 1;
                }
            }
            out.copy_from_slice(&acc);
        }
        if blocked < self.outputs {
            let out = &mut out[blocked..];
            for (&xj, row) in x.iter().zip(w.chunks_exact(self.outputs)) {
                axpy(xj, &row[blocked..], out);
            }
        }
    }

    /// The gradient with respect to the input, `W·δ`, for the output gradient δ.
    #[inline]
    pub fn backward_input(&self, params: &[f64], delta: &[f64], out: &mut [f64]) {
        let (w, _) = self.weights_and_bias(params);
        for (o, row) in out.iter_mut().zip(w.chunks_exact(self.outputs)) {
            *o = dot(row, delta);
        }
    }

    /// Adds `scale·∇` to `acc`, where ∇ is the parameter gradient for input x and output
    /// gradient δ: the outer product x⊗δ for the weights, δ for the biases.
    #[inline]
    pub fn add_gradient(&self, x: &[f64], delta: &[f64], scale: f64, acc: &mut [f64]) {
        let (gw, gb) =
            acc[self.offset..self.offset + self.len()].split_at_mut(self.inputs * self.outputs);
        for (&xj, row) in x.iter().zip(gw.chunks_exact_mut(self.outputs)) {
            axpy(scale * xj, delta, row);
        }
        axpy(scale, delta, gb);
    }

    /// ‖∇‖² of that gradient without forming it: ‖x⊗δ‖² + ‖δ‖² = (‖x‖² + 1)‖δ‖².
    #[inline]
    pub fn gradient_norm_sq(x_norm_sq: f64, delta: &[f64]) -> f64 {
        (x_norm_sq + 1.0) * norm_sq(delta)
    }
}

/// Softmax cross-entropy of `logits` at class `label`, by a stable log-sum-exp. Overwrites
/// `logits` with ∂loss/∂logits = softmax − e_label and returns the loss.
#[inline]
pub(crate) fn softmax_cross_entropy(logits: &mut [f64], label: usize) -> f64 {
    // Shifting by the largest logit keeps every exponential ≤ 1 and their sum in [1, K].
    let max = logits.iter().fold(f64::NEG_INFINITY, |m, &z| m.max(z));
    let label_shifted = logits[label] - max;
    let mut total = 0.0;
    for z in logits.iter_mut() {
        *z = libm::exp(*z - max);
        total += *z;
    }
    let loss = libm::log(total) - label_shifted;
    let inv = 1.0 / total;
    for p in logits.iter_mut() {
        *p *= inv;
    }
    logits[label] -= 1.0;
    loss
}

/// Binary cross-entropy of one logit z at class `label` (1: positive), −log σ(z) or
/// −log(1 − σ(z)), computed stably as max(z, 0) − y·z + ln(1 + e^{−|z|}). Overwrites `out[0]`
/// with ∂loss/∂z = σ(z) − y and returns the loss.
#[inline]
pub(crate) fn sigmoid_cross_entropy(out: &mut [f64], label: usize) -> f64 {
    let z = out[0];
    let y = if label == 1 { 1.0 } else { 0.0 };
    let e = libm::exp(-z.abs());
    // σ(z) from e^{−|z|} ≤ 1, so nothing overflows.
    let sigma = if z >= 0.0 {
        1.0 / (1.0 + e)
    } else {
        e / (1.0 + e)
    };
    out[0] = sigma - y;
    z.max(0.0) - y * z + libm::log1p(e)
}

/// Gradients are clipped to C/(1 + CLIP_MARGIN) so that rounding in a computed norm can never
/// leave a clipped gradient longer than C (the sensitivity the noise is calibrated to).
const CLIP_MARGIN: f64 = 1e-9;

/// The factor that clips a gradient of squared norm `norm_sq` to norm ≤ `clip` (1 when it
/// is shorter): min(1, C/‖g‖), with ‖g‖ inflated by [`CLIP_MARGIN`] against rounding.
pub(crate) fn clip_factor(norm_sq: f64, clip: f64) -> f64 {
    let norm = norm_sq.sqrt() * (1.0 + CLIP_MARGIN);
    if norm > clip {
        clip / norm
    } else {
        1.0
    }
}

/// The index of the largest value (the first on ties).
#[inline]
pub(crate) fn argmax(v: &[f64]) -> usize {
    let mut best = 0;
    for (k, &z) in v.iter().enumerate() {
        if z > v[best] {
            best = k;
        }
    }
    best
}
