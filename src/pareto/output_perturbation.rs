//! Spec 001 §3.1 A as DPareto's oracle: output-perturbed L2-regularised logistic regression
//! (Wu et al. 2017, Alg. 2, "bolt-on" projected SGD), λ = (γ, σ) ↦ (ε, test error of each run).
//!
//! Training follows the release's code (spec §3.1 A [code]): features scaled so the largest
//! training row has ‖x‖₂ = 1 (the same factor on the test rows), no intercept, batch size 1,
//! `epochs` passes, step η_t = min(1/(1 + γ), 1/(γt)) with t counting examples from 1,
//! w ← (1 − η_tγ)w − η_t∇ℓ(w; x, y) with the logistic loss ℓ = ln(1 + e^{−y w·x}), then
//! projection onto the ball of radius 1/γ. The pass order is one uniformly random permutation
//! drawn from the evaluation's rng and kept for every pass (Wu et al.'s τ). Each of `runs`
//! runs adds N(0, σ²I) to the one trained w and scores its test error; the non-private training
//! does not depend on σ, so it is done once per evaluation.
//!
//! With ‖x‖ ≤ 1 the gradient has norm ≤ 1, so ‖w‖ ≤ 1/γ is kept by the step itself:
//! ‖(1 − ηγ)w − η∇ℓ‖ ≤ (1 − ηγ)/γ + η = 1/γ, and the projection never moves w. It is applied
//! anyway, as the algorithm (and its sensitivity proof) states it.
//!
//! Privacy: the analytic Gaussian mechanism at Δ = 4/(nγ) and δ = 1e-6
//! ([`output_perturbation_epsilon`]); it depends on λ and n alone.

use super::dpareto::{Dimension, Observation, Oracle};
use super::oracles::output_perturbation_epsilon;
use crate::data::{Target, TrainTest};
use crate::error::{fmt_num, Error, Result};
use crate::rng::normal;
use ndarray::{Array1, Array2, ArrayView2};
use rand::RngCore;
use std::sync::Arc;

/// δ of spec §3.1 A.
pub const OUTPUT_PERTURBATION_DELTA: f64 = 1e-6;

/// Rows (already scaled) and labels in {−1, +1}.
#[derive(Debug)]
struct Part {
    x: Array2<f64>,
    y: Vec<f64>,
}

/// The oracle. Cloning is cheap (the data are shared), so each worker thread can own one.
#[derive(Clone, Debug)]
pub struct OutputPerturbationOracle {
    train: Arc<Part>,
    test: Arc<Part>,
    /// Noisy runs per evaluation (spec: 50); the objective is their mean test error.
    pub runs: usize,
    /// SGD passes over the training rows (spec: 10).
    pub epochs: usize,
}

/// Labels 0 / −1 ↦ −1 and 1 ↦ +1; anything else is an error naming `what`.
fn signs(labels: &[f64], what: &'static str) -> Result<Vec<f64>> {
    labels
        .iter()
        .map(|&l| match l {
            1.0 => Ok(1.0),
            0.0 | -1.0 => Ok(-1.0),
            l => Err(Error::invalid(
                what,
                fmt_num(l),
                "binary labels, 0/1 or -1/+1",
            )),
        })
        .collect()
}

impl OutputPerturbationOracle {
    /// Spec 001 §3.1 A: 50 runs of 10 passes.
    pub const PAPER_RUNS: usize = 50;
    pub const PAPER_EPOCHS: usize = 10;

    /// From raw features and binary labels (0/1 or ±1). The features are scaled by one factor
    /// so that the largest training row has norm 1.
    pub fn new(
        train: (ArrayView2<f64>, &[f64]),
        test: (ArrayView2<f64>, &[f64]),
        runs: usize,
        epochs: usize,
    ) -> Result<Self> {
        let (n, d) = train.0.dim();
        if n == 0 || d == 0 {
            return Err(Error::invalid(
                "training data",
                format!("{n} × {d}"),
                "at least one row and one feature",
            ));
        }
        if train.1.len() != n || test.1.len() != test.0.nrows() {
            return Err(Error::invalid(
                "labels",
                format!("{} and {}", train.1.len(), test.1.len()),
                "one label per row of the training and test features",
            ));
        }
        if test.0.ncols() != d || test.0.nrows() == 0 {
            return Err(Error::invalid(
                "test data",
                format!("{} × {}", test.0.nrows(), test.0.ncols()),
                format!("at least one row of {d} features"),
            ));
        }
        if runs == 0 || epochs == 0 {
            return Err(Error::invalid(
                "runs and epochs",
                format!("{runs} and {epochs}"),
                "at least 1 each",
            ));
        }
        if train.0.iter().chain(test.0.iter()).any(|v| !v.is_finite()) {
            return Err(Error::invalid(
                "features",
                "a non-finite value",
                "finite numbers",
            ));
        }
        let largest = train
            .0
            .rows()
            .into_iter()
            .map(|r| r.dot(&r).sqrt())
            .fold(0.0, f64::max);
        if largest == 0.0 {
            return Err(Error::invalid(
                "training data",
                "every row zero",
                "at least one non-zero row",
            ));
        }
        Ok(OutputPerturbationOracle {
            train: Arc::new(Part {
                x: train.0.mapv(|v| v / largest),
                y: signs(train.1, "training labels")?,
            }),
            test: Arc::new(Part {
                x: test.0.mapv(|v| v / largest),
                y: signs(test.1, "test labels")?,
            }),
            runs,
            epochs,
        })
    }

    /// From a binary classification split (label 1 is the positive class).
    pub fn from_data(data: &TrainTest, runs: usize, epochs: usize) -> Result<Self> {
        let labels = |t: &Target, what: &'static str| -> Result<Vec<f64>> {
            match t {
                Target::Classes { labels, names } if names.len() == 2 => {
                    Ok(labels.iter().map(|&l| l as f64).collect())
                }
                _ => Err(Error::invalid(
                    what,
                    "not two classes",
                    "a binary classification target",
                )),
            }
        };
        let (ytr, yte) = (
            labels(&data.train.target, "training labels")?,
            labels(&data.test.target, "test labels")?,
        );
        Self::new(
            (data.train.x.view(), &ytr),
            (data.test.x.view(), &yte),
            runs,
            epochs,
        )
    }

    /// The box of spec §3.1 A: γ log-uniform on [1e-4, 1], σ log-uniform on [0.1, 10].
    pub fn dimensions() -> Result<Vec<Dimension>> {
        Ok(vec![
            Dimension::log("gamma", 1e-4, 1.0)?,
            Dimension::log("sigma", 0.1, 10.0)?,
        ])
    }

    /// The number of training rows (the n of ε).
    pub fn train_size(&self) -> usize {
        self.train.y.len()
    }

    /// ε at (γ, σ) and δ = 1e-6. An error names the point and the data size: ε grows like 1/(nγσ), so a small data
    /// set is the usual cause.
    pub fn epsilon_at(&self, gamma: f64, sigma: f64) -> Result<f64> {
        let n = self.train_size();
        output_perturbation_epsilon(n, gamma, sigma, OUTPUT_PERTURBATION_DELTA)
            .map(|b| b.epsilon)
            .map_err(|e| {
                e.context(&format!(
                    "output perturbation at γ = {gamma:.3e}, σ = {sigma:.3e} on n = {n} training rows \
                     (ε grows like 1/(nγσ): more training rows or a box of larger γ and σ)"
                ))
            })
    }

    /// The non-private weights at γ, with the training rows visited in `order` each pass.
    pub fn train(&self, gamma: f64, order: &[usize]) -> Result<Array1<f64>> {
        bolt_on_sgd(
            self.train.x.view(),
            &self.train.y,
            gamma,
            self.epochs,
            order,
        )
    }

    /// The test error of `w` (predict +1 where w·x > 0).
    pub fn test_error(&self, w: &Array1<f64>) -> f64 {
        let margins = self.test.x.dot(w);
        misclassified(margins.iter().copied(), &self.test.y)
    }

    /// The test error of each of `runs` noisy copies w + N(0, σ²I), noise drawn from `rng`
    /// (run by run, coordinate by coordinate).
    pub fn noisy_errors(
        &self,
        w: &Array1<f64>,
        sigma: f64,
        rng: &mut dyn RngCore,
    ) -> Result<Vec<f64>> {
        if !(sigma.is_finite() && sigma >= 0.0) {
            return Err(Error::invalid(
                "sigma",
                fmt_num(sigma),
                "a finite number >= 0",
            ));
        }
        // runs × d, filled row by row.
        let mut noise = Array2::<f64>::zeros((self.runs, w.len()));
        for v in noise.iter_mut() {
            *v = sigma * normal(rng);
        }
        let base = self.test.x.dot(w);
        let extra = self.test.x.dot(&noise.t()); // n_test × runs
        Ok((0..self.runs)
            .map(|r| {
                let margins = base.iter().zip(extra.column(r)).map(|(b, e)| b + e);
                misclassified(margins, &self.test.y)
            })
            .collect())
    }
}

/// The share of rows whose margin's sign (> 0 ↦ +1) differs from the label's.
fn misclassified(margins: impl Iterator<Item = f64>, y: &[f64]) -> f64 {
    let wrong = margins
        .zip(y)
        .filter(|&(m, &y)| (m > 0.0) != (y > 0.0))
        .count();
    wrong as f64 / y.len() as f64
}

/// Bolt-on projected SGD (module docs) on rows `x` (used as given) with labels ±1, visiting
/// the rows in `order` in each of `epochs` passes, from w = 0.
pub fn bolt_on_sgd(
    x: ArrayView2<f64>,
    y: &[f64],
    gamma: f64,
    epochs: usize,
    order: &[usize],
) -> Result<Array1<f64>> {
    if !(gamma.is_finite() && gamma > 0.0) {
        return Err(Error::invalid(
            "gamma",
            fmt_num(gamma),
            "a finite number > 0",
        ));
    }
    if let Some(&i) = order.iter().find(|&&i| i >= x.nrows()) {
        return Err(Error::invalid(
            "order",
            i,
            format!("row indices below {}", x.nrows()),
        ));
    }
    let radius = 1.0 / gamma;
    let mut w = Array1::<f64>::zeros(x.ncols());
    let mut t = 0u64;
    for _ in 0..epochs {
        for &i in order {
            t += 1;
            let eta = (1.0 / (1.0 + gamma)).min(1.0 / (gamma * t as f64));
            let row = x.row(i);
            let margin = y[i] * w.dot(&row);
            // ∇ℓ = −y·x·s(−y w·x), s the logistic function.
            let slope = -y[i] / (1.0 + libm::exp(margin));
            let decay = 1.0 - eta * gamma;
            w.zip_mut_with(&row, |wk, &xk| *wk = decay * *wk - eta * slope * xk);
            let norm = w.dot(&w).sqrt();
            if norm > radius {
                w.mapv_inplace(|v| v * radius / norm);
            }
        }
    }
    Ok(w)
}

fn point(lambda: &[f64]) -> Result<(f64, f64)> {
    match lambda {
        [gamma, sigma] => Ok((*gamma, *sigma)),
        _ => Err(Error::invalid(
            "lambda",
            format!("{} values", lambda.len()),
            "2 values (regularisation gamma, noise sigma)",
        )),
    }
}

impl Oracle for OutputPerturbationOracle {
    fn evaluate(&mut self, lambda: &[f64], rng: &mut dyn RngCore) -> Result<Observation> {
        let (gamma, sigma) = point(lambda)?;
        let epsilon = self.epsilon_at(gamma, sigma)?;
        let order = crate::data::shuffled_indices(self.train_size(), rng);
        let w = self.train(gamma, &order)?;
        Ok(Observation {
            epsilon,
            errors: self.noisy_errors(&w, sigma, rng)?,
        })
    }

    fn epsilon(&self, lambda: &[f64]) -> Option<Result<f64>> {
        Some(point(lambda).and_then(|(g, s)| self.epsilon_at(g, s)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::stream;
    use ndarray::array;

    /// Three rows in the order (2, 0, 1), γ = 0.5 (radius 2): reference values from an
    /// independent float64 evaluation of the same recursion (Python, plain loops). The rows
    /// are not scaled here (‖x₃‖ = 5), so the projection acts, at the third step.
    #[test]
    fn three_rows_by_hand() {
        let x = array![[3.0, 0.0], [0.0, 4.0], [3.0, 4.0]];
        let y = [1.0, -1.0, 1.0];
        let close = |w: &Array1<f64>, want: [f64; 2]| {
            assert!(
                (w[0] - want[0]).abs() < 1e-12 && (w[1] - want[1]).abs() < 1e-12,
                "{w:?} vs {want:?}"
            )
        };
        let one = bolt_on_sgd(x.view(), &y, 0.5, 1, &[2, 0, 1]).unwrap();
        close(&one, [0.4920697132441934, -1.9385219620390628]);
        assert!(
            (one.dot(&one).sqrt() - 2.0).abs() < 1e-12,
            "projected onto radius 2"
        );
        let two = bolt_on_sgd(x.view(), &y, 0.5, 2, &[2, 0, 1]).unwrap();
        close(&two, [1.2478499205978235, -0.7719215075386999]);
    }

    /// The same rows through the oracle: scaled by 1/5, two passes, the projection inactive.
    #[test]
    fn the_oracle_scales_rows_and_stays_inside_the_ball() {
        let x = array![[3.0, 0.0], [0.0, 4.0], [3.0, 4.0]];
        let o = OutputPerturbationOracle::new(
            (x.view(), &[1.0, 0.0, 1.0]),
            (x.view(), &[1.0, 0.0, 1.0]),
            5,
            2,
        )
        .unwrap();
        let w = o.train(0.5, &[2, 0, 1]).unwrap();
        let want = [0.298067365943432, -0.0864060305187442];
        assert!(
            (w[0] - want[0]).abs() < 1e-12 && (w[1] - want[1]).abs() < 1e-12,
            "{w:?}"
        );
        for gamma in [1e-4, 1e-2, 1.0] {
            let w = o.train(gamma, &[0, 1, 2]).unwrap();
            assert!(w.dot(&w).sqrt() <= 1.0 / gamma);
        }
    }

    fn fixture() -> OutputPerturbationOracle {
        let data = crate::workloads::dpsgd_tasks::TaskData::Adult
            .from_files(&[
                "tests/fixtures/real_data/adult-sample.data",
                "tests/fixtures/real_data/adult-sample.test",
            ])
            .unwrap();
        OutputPerturbationOracle::from_data(&data, 20, 2).unwrap()
    }

    #[test]
    fn epsilon_is_the_analytic_gaussian_and_tiny_noise_is_the_non_private_error() {
        let mut o = fixture();
        let n = o.train_size();
        let obs = o.evaluate(&[1e-2, 1.0], &mut stream(3, &[])).unwrap();
        let want = output_perturbation_epsilon(n, 1e-2, 1.0, 1e-6)
            .unwrap()
            .epsilon;
        assert_eq!(obs.epsilon, want);
        assert_eq!(o.epsilon(&[1e-2, 1.0]).unwrap().unwrap(), want);
        assert_eq!(obs.errors.len(), 20);
        assert!(obs.errors.iter().all(|e| (0.0..=1.0).contains(e)));
        // The same rng: the permutation, then the noise. With σ → 0 each run is the model.
        let order = crate::data::shuffled_indices(n, &mut stream(4, &[]));
        let w = o.train(1e-2, &order).unwrap();
        let clean = o.test_error(&w);
        let noisy = o.noisy_errors(&w, 1e-12, &mut stream(5, &[])).unwrap();
        assert!(noisy.iter().all(|&e| e == clean), "{noisy:?} vs {clean}");
        // Noise hurts on average, and a non-private model beats chance on adult.
        assert!(clean < 0.3, "{clean}");
        let loud = o.noisy_errors(&w, 10.0, &mut stream(5, &[])).unwrap();
        assert!(loud.iter().sum::<f64>() / 20.0 > clean);
    }

    #[test]
    fn deterministic_per_stream_and_errors_named() {
        let mut o = fixture();
        let a = o.evaluate(&[0.1, 0.5], &mut stream(9, &[1])).unwrap();
        let b = o.evaluate(&[0.1, 0.5], &mut stream(9, &[1])).unwrap();
        assert_eq!(a, b);
        let e = o.evaluate(&[0.1], &mut stream(9, &[])).unwrap_err();
        assert!(e.to_string().contains("lambda"), "{e}");
        let e = o.evaluate(&[-0.1, 1.0], &mut stream(9, &[])).unwrap_err();
        assert!(e.to_string().contains("gamma"), "{e}");
        let x = array![[1.0], [2.0]];
        let e =
            OutputPerturbationOracle::new((x.view(), &[1.0, 2.0]), (x.view(), &[1.0, 0.0]), 1, 1)
                .unwrap_err();
        assert!(e.to_string().contains("labels"), "{e}");
        // Too few rows for ε below 1e6 at the box's corner: the point and n are named.
        let x = array![[3.0, 0.0], [0.0, 4.0], [3.0, 4.0]];
        let y = [1.0, 0.0, 1.0];
        let tiny = OutputPerturbationOracle::new((x.view(), &y), (x.view(), &y), 1, 1).unwrap();
        let e = tiny.epsilon_at(1e-4, 0.1).unwrap_err().to_string();
        assert!(
            e.contains("γ = 1.000e-4, σ = 1.000e-1 on n = 3 training rows"),
            "{e}"
        );
    }
}
