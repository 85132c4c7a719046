//! Differentiable classifiers with flat parameter vectors and per-example losses: what DP-SGD
//! needs (one gradient per example, its norm, clipping) and what evaluation needs.

use crate::error::{Error, Result};
use ndarray::{ArrayView2, CowArray, Ix2};
use rand::RngCore;
use rayon::prelude::*;

/// The loss of one example and the squared ℓ2 norm of its gradient.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ExampleGradient {
    pub loss: f64,
    pub norm_sq: f64,
}

/// A classifier with parameters θ ∈ ℝᵖ, trained to minimise (1/n)·Σᵢ ℓ(θ; xᵢ, yᵢ) + R(θ).
/// Labels are class indices in `0..n_classes()`; binary models map class 1 → +1, 0 → −1.
///
/// The per-example gradient comes in two steps, so that DP-SGD can clip it without writing it
/// out: [`backward`](Model::backward) returns the loss and ‖∇ℓ‖² and leaves in `scratch` what
/// [`add_gradient`](Model::add_gradient) needs to add a multiple of ∇ℓ to an accumulator.
/// `scratch` is working memory of [`scratch_len`](Model::scratch_len) values owned by the
/// caller, so the inner loop allocates nothing.
pub trait Model: Send + Sync {
    fn n_features(&self) -> usize;
    fn n_classes(&self) -> usize;
    /// p, the length of the parameter vector.
    fn n_params(&self) -> usize;
    /// The length of the working memory `backward`, `add_gradient` and `predict` use.
    fn scratch_len(&self) -> usize;
    /// Initial parameters, drawn from `rng` (deterministic models draw nothing).
    fn init(&self, rng: &mut dyn RngCore) -> Vec<f64>;
    /// Forward and backward pass for one example.
    fn backward(
        &self,
        params: &[f64],
        x: &[f64],
        label: usize,
        scratch: &mut [f64],
    ) -> ExampleGradient;
    /// Adds `scale·∇ℓ` for the example last passed to `backward` with this `scratch`.
    fn add_gradient(&self, x: &[f64], scale: f64, scratch: &[f64], acc: &mut [f64]);
    /// The predicted class.
    fn predict(&self, params: &[f64], x: &[f64], scratch: &mut [f64]) -> usize;
    /// The model as dense layers and a loss head, for the batched engine that DP-SGD uses
    /// (None: DP-SGD falls back to one example at a time through `backward`).
    fn network(&self) -> Option<super::Network> {
        None
    }
    /// Whether R(θ) is ever non-zero (engines that cannot add ∇R refuse such a model).
    fn has_regulariser(&self) -> bool {
        false
    }
    /// R(θ), the data-independent part of the objective.
    fn regulariser(&self, _params: &[f64]) -> f64 {
        0.0
    }
    /// Adds ∇R(θ) to `grad`.
    fn add_regulariser_gradient(&self, _params: &[f64], _grad: &mut [f64]) {}

    /// ℓ(θ; x, label), writing ∇ℓ into `grad` (length p).
    fn loss_grad(
        &self,
        params: &[f64],
        x: &[f64],
        label: usize,
        grad: &mut [f64],
        scratch: &mut [f64],
    ) -> f64 {
        let g = self.backward(params, x, label, scratch);
        grad.fill(0.0);
        self.add_gradient(x, 1.0, scratch, grad);
        g.loss
    }
}

/// Checks that every label is a class index below `classes`, naming the first that is not.
pub(crate) fn check_labels(classes: usize, labels: &[usize]) -> Result<()> {
    match labels.iter().enumerate().find(|(_, &l)| l >= classes) {
        Some((i, &label)) => Err(Error::invalid(
            "labels",
            format!("{label} at row {i}"),
            format!("class indices < {classes}"),
        )),
        None => Ok(()),
    }
}

/// Checks that `x` and `labels` fit `model` and `params`; returns `x` in row-major layout.
pub(crate) fn check_data<'a, M: Model + ?Sized>(
    model: &M,
    params: &[f64],
    x: ArrayView2<'a, f64>,
    labels: &[usize],
) -> Result<CowArray<'a, f64, Ix2>> {
    if params.len() != model.n_params() {
        return Err(Error::invalid(
            "params",
            format!("{} values", params.len()),
            format!("{} values (the model's parameter count)", model.n_params()),
        ));
    }
    if x.ncols() != model.n_features() {
        return Err(Error::invalid(
            "x",
            format!("{} columns", x.ncols()),
            format!("{} columns (the model's inputs)", model.n_features()),
        ));
    }
    if x.nrows() == 0 || labels.len() != x.nrows() {
        return Err(Error::invalid(
            "labels",
            format!("{} labels for {} rows", labels.len(), x.nrows()),
            "one label per row of x, at least one row",
        ));
    }
    check_labels(model.n_classes(), labels)?;
    // One fast pass over the values; the row is looked up only when there is one to name.
    if !x.iter().all(|v| v.is_finite()) {
        let i = x
            .rows()
            .into_iter()
            .position(|row| !row.iter().all(|v| v.is_finite()))
            .unwrap_or(0);
        return Err(Error::invalid(
            "x",
            format!("a non-finite value in row {i}"),
            "finite features",
        ));
    }
    Ok(if x.is_standard_layout() {
        CowArray::from(x)
    } else {
        CowArray::from(x.as_standard_layout().into_owned())
    })
}

/// Rows per parallel task in evaluation; per-task sums are added in task order.
const EVAL_CHUNK: usize = 64;

/// Σ over rows of `f(row, label, scratch)`, in parallel with fixed chunks and a fixed order.
fn sum_over_rows<M: Model + ?Sized>(
    model: &M,
    x: &[f64],
    labels: &[usize],
    f: impl Fn(&[f64], usize, &mut [f64]) -> f64 + Sync,
) -> f64 {
    let d = model.n_features();
    let chunk_sums: Vec<f64> = labels
        .par_chunks(EVAL_CHUNK)
        .zip(x.par_chunks(EVAL_CHUNK * d.max(1)))
        .map(|(labels, rows)| {
            let mut scratch = vec![0.0; model.scratch_len()];
            labels
                .iter()
                .zip(rows.chunks_exact(d.max(1)))
                .map(|(&label, row)| f(&row[..d], label, &mut scratch))
                .sum()
        })
        .collect();
    chunk_sums.iter().sum()
}

/// The fraction of rows of `x` whose predicted class is the label.
pub fn accuracy<M: Model + ?Sized>(
    model: &M,
    params: &[f64],
    x: ArrayView2<f64>,
    labels: &[usize],
) -> Result<f64> {
    let x = check_data(model, params, x, labels)?;
    let x = x.as_slice().expect("standard layout");
    let correct = sum_over_rows(model, x, labels, |row, label, scratch| {
        f64::from(u8::from(model.predict(params, row, scratch) == label))
    });
    Ok(correct / labels.len() as f64)
}

/// The mean per-example loss (1/n)·Σᵢ ℓ(θ; xᵢ, yᵢ), without the regulariser.
pub fn mean_loss<M: Model + ?Sized>(
    model: &M,
    params: &[f64],
    x: ArrayView2<f64>,
    labels: &[usize],
) -> Result<f64> {
    let x = check_data(model, params, x, labels)?;
    let x = x.as_slice().expect("standard layout");
    let total = sum_over_rows(model, x, labels, |row, label, scratch| {
        model.backward(params, row, label, scratch).loss
    });
    Ok(total / labels.len() as f64)
}

/// The training objective (1/n)·Σᵢ ℓ(θ; xᵢ, yᵢ) + R(θ).
pub fn objective<M: Model + ?Sized>(
    model: &M,
    params: &[f64],
    x: ArrayView2<f64>,
    labels: &[usize],
) -> Result<f64> {
    Ok(mean_loss(model, params, x, labels)? + model.regulariser(params))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::learn::{LinearSvm, Logistic, WeightPenalty};
    use crate::rng::{normal, stream};
    use ndarray::{Array2, ShapeBuilder};

    #[test]
    fn evaluation_matches_a_plain_loop_in_any_layout() {
        // More rows than one parallel chunk, so several chunk sums are combined.
        let (n, d) = (150, 3);
        let mut rng = stream(20, &[]);
        let model = Logistic::new(d, 4).unwrap();
        let params: Vec<f64> = (0..model.n_params()).map(|_| normal(&mut rng)).collect();
        let x = Array2::from_shape_fn((n, d), |_| normal(&mut rng));
        let labels: Vec<usize> = (0..n).map(|i| i % 4).collect();
        let mut scratch = vec![0.0; model.scratch_len()];
        let (mut loss, mut correct) = (0.0, 0);
        for (row, &label) in x.rows().into_iter().zip(&labels) {
            let row = row.to_vec();
            loss += model.backward(&params, &row, label, &mut scratch).loss;
            correct += usize::from(model.predict(&params, &row, &mut scratch) == label);
        }
        assert!(correct > 0 && correct < n);
        let acc = accuracy(&model, &params, x.view(), &labels).unwrap();
        assert_eq!(acc, correct as f64 / n as f64);
        let mean = mean_loss(&model, &params, x.view(), &labels).unwrap();
        assert!((mean - loss / n as f64).abs() < 1e-13 * mean);
        // A column-major copy of the same data gives the same answers.
        let mut fortran = Array2::zeros((n, d).f());
        fortran.assign(&x);
        assert_eq!(
            accuracy(&model, &params, fortran.view(), &labels).unwrap(),
            acc
        );
        assert_eq!(
            mean_loss(&model, &params, fortran.view(), &labels).unwrap(),
            mean
        );
        assert!(accuracy(&model, &params[1..], x.view(), &labels).is_err());
        assert!(accuracy(&model, &params, x.view(), &labels[1..]).is_err());
    }

    #[test]
    fn objective_adds_the_regulariser() {
        let svm = LinearSvm::new(1, 2.0, WeightPenalty::SquaredNorm).unwrap();
        let x = Array2::from_shape_vec((2, 1), vec![1.0, -1.0]).unwrap();
        // w = 0.5, b = 0: both margins 0.5, so each hinge is 2·0.5; R = 0.25.
        let params = [0.5, 0.0];
        assert_eq!(mean_loss(&svm, &params, x.view(), &[1, 0]).unwrap(), 1.0);
        assert_eq!(objective(&svm, &params, x.view(), &[1, 0]).unwrap(), 1.25);
        let mut nan = x.clone();
        nan[[1, 0]] = f64::NAN;
        let msg = mean_loss(&svm, &params, nan.view(), &[1, 0])
            .unwrap_err()
            .to_string();
        assert!(msg.contains("non-finite value in row 1"), "{msg}");
    }
}

#[cfg(test)]
pub(crate) mod testing {
    //! Checks every model's gradients must pass.
    use super::*;

    /// Compares `loss_grad` with central finite differences and `backward`'s norm with the
    /// norm of the written-out gradient, at `params`, for each row of `x`.
    pub fn check_gradients<M: Model>(model: &M, params: &[f64], x: &[Vec<f64>], labels: &[usize]) {
        let p = model.n_params();
        let mut scratch = vec![0.0; model.scratch_len()];
        let mut grad = vec![0.0; p];
        let mut shifted = params.to_vec();
        for (row, &label) in x.iter().zip(labels) {
            let loss = model.loss_grad(params, row, label, &mut grad, &mut scratch);
            let back = model.backward(params, row, label, &mut scratch);
            assert_eq!(loss, back.loss);
            let norm_sq: f64 = grad.iter().map(|g| g * g).sum();
            assert!(
                (back.norm_sq - norm_sq).abs() <= 1e-12 * norm_sq.max(1e-300),
                "norm² {} vs {norm_sq}",
                back.norm_sq
            );
            for j in 0..p {
                let h = 1e-5 * params[j].abs().max(1.0);
                shifted[j] = params[j] + h;
                let up = model.backward(&shifted, row, label, &mut scratch).loss;
                shifted[j] = params[j] - h;
                let down = model.backward(&shifted, row, label, &mut scratch).loss;
                shifted[j] = params[j];
                let fd = (up - down) / (2.0 * h);
                assert!(
                    (fd - grad[j]).abs() <= 1e-6 * grad[j].abs().max(1e-2),
                    "parameter {j}: finite difference {fd} vs gradient {}",
                    grad[j]
                );
            }
        }
    }

    /// The same for the regulariser.
    pub fn check_regulariser<M: Model>(model: &M, params: &[f64]) {
        let mut grad = vec![0.0; params.len()];
        model.add_regulariser_gradient(params, &mut grad);
        let mut shifted = params.to_vec();
        for j in 0..params.len() {
            let h = 1e-5 * params[j].abs().max(1.0);
            shifted[j] = params[j] + h;
            let up = model.regulariser(&shifted);
            shifted[j] = params[j] - h;
            let down = model.regulariser(&shifted);
            shifted[j] = params[j];
            let fd = (up - down) / (2.0 * h);
            assert!(
                (fd - grad[j]).abs() <= 1e-6 * grad[j].abs().max(1e-2),
                "regulariser parameter {j}: finite difference {fd} vs gradient {}",
                grad[j]
            );
        }
    }
}
