//! A binary kernel SVM (C-SVM) trained by sequential minimal optimisation, as LIBSVM (and so
//! scikit-learn's `SVC`) trains it.
//!
//! # The problem
//!
//! With labels y_i ∈ {−1, +1} (class 1 → +1, class 0 → −1) and kernel k, the dual is
//!
//! ```text
//! max_α  W(α) = Σ_i α_i − ½ Σ_ij α_i α_j y_i y_j k(x_i, x_j)
//! s.t.   0 ≤ α_i ≤ C,  Σ_i y_i α_i = 0,
//! ```
//!
//! and the classifier is f(x) = Σ_i y_i α_i k(x_i, x) + b, class 1 where f(x) > 0.
//!
//! # The solver
//!
//! SMO in LIBSVM's formulation, shared with ε-SVR (`smo_solver.rs`): minimise
//! ½αᵀQα − eᵀα with Q_ij = y_i y_j k(x_i, x_j), two coordinates at a time, the pair chosen by
//! the second-order working-set selection of Fan, Chen & Lin (JMLR 6, 2005, "WSS 2"), no
//! shrinking and no kernel cache: the Gram matrix is computed once, in full (so training is
//! limited to [`MAX_TRAIN_ROWS`] rows, 200 MB of f64s at most), in f64 (LIBSVM stores Q in
//! f32).
//!
//! Stopping: when the maximal KKT violation m(α) − M(α) (LIBSVM's `Gmax + Gmax2`) is ≤ `tol`
//! (default 1e-3, LIBSVM's and scikit-learn's). At that point every training example satisfies
//! its KKT condition to within `tol`: y_i f(x_i) ≥ 1 − tol where α_i = 0, ≤ 1 + tol where
//! α_i = C, and |y_i f(x_i) − 1| ≤ tol in between. If the violation is still above `tol`
//! after `max_iter` pair updates, [`fit`] returns an error instead of a model.
//!
//! Bias: as LIBSVM's `calculate_rho`, b = −ρ with ρ the mean of y_i G_i over the free vectors
//! (0 < α_i < C), or, when there are none, the midpoint of the interval of feasible ρ.
//!
//! Everything is deterministic: the Gram matrix and predictions are computed in parallel, row
//! by row, each entry by the same sequential sum, so results do not depend on the thread
//! count.

use super::smo_solver::{Dual, Solver};
use crate::error::{Error, Range, Result};
use ndarray::{Array1, Array2, ArrayView1, ArrayView2, Axis, Zip};

/// The most training rows [`fit`] accepts: the full n × n Gram matrix is kept in memory
/// (5000² f64s = 200 MB).
pub const MAX_TRAIN_ROWS: usize = 5_000;

/// The kernel k(x, x′).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SvmKernel {
    /// exp(−γ ‖x − x′‖²), γ > 0 (scikit-learn's `gamma`).
    Rbf { gamma: f64 },
    /// x · x′.
    Linear,
}

impl SvmKernel {
    /// k(a, b); the RBF distance is summed over exact differences (no ‖a‖² + ‖b‖² − 2a·b
    /// cancellation).
    pub fn eval(&self, a: ArrayView1<f64>, b: ArrayView1<f64>) -> f64 {
        match *self {
            SvmKernel::Rbf { gamma } => {
                let sq: f64 = a.iter().zip(b).map(|(u, v)| (u - v) * (u - v)).sum();
                libm::exp(-gamma * sq)
            }
            SvmKernel::Linear => a.iter().zip(b).map(|(u, v)| u * v).sum(),
        }
    }
}

/// The training parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SvmParams {
    /// The box constraint C > 0 (the cost of a margin violation).
    pub c: f64,
    pub kernel: SvmKernel,
    /// Stop when the maximal KKT violation is ≤ tol (> 0).
    pub tol: f64,
    /// The most pair updates before [`fit`] gives up with an error (≥ 1).
    pub max_iter: usize,
}

impl SvmParams {
    /// LIBSVM's and scikit-learn's default stopping tolerance.
    pub const DEFAULT_TOL: f64 = 1e-3;
    /// Far more than SMO needs on data of [`MAX_TRAIN_ROWS`] rows unless the problem is
    /// degenerate; LIBSVM's own guard is max(10⁷, 100 n).
    pub const DEFAULT_MAX_ITER: usize = 10_000_000;

    /// Parameters with the default `tol` and `max_iter`, checked.
    pub fn new(c: f64, kernel: SvmKernel) -> Result<Self> {
        let p = SvmParams {
            c,
            kernel,
            tol: Self::DEFAULT_TOL,
            max_iter: Self::DEFAULT_MAX_ITER,
        };
        p.validate()?;
        Ok(p)
    }

    /// Checks every field (C, γ and tol finite and > 0; max_iter ≥ 1).
    pub fn validate(&self) -> Result<()> {
        Range::Positive.check("C", self.c)?;
        if let SvmKernel::Rbf { gamma } = self.kernel {
            Range::Positive.check("gamma", gamma)?;
        }
        Range::Positive.check("tol", self.tol)?;
        if self.max_iter == 0 {
            return Err(Error::invalid("max_iter", 0, "at least 1"));
        }
        Ok(())
    }
}

/// A trained binary SVM: its support vectors, their coefficients y_i α_i and the bias.
#[derive(Clone, Debug)]
pub struct KernelSvm {
    kernel: SvmKernel,
    c: f64,
    support_vectors: Array2<f64>,
    support_indices: Vec<usize>,
    dual_coef: Array1<f64>,
    bias: f64,
    dual_objective: f64,
    iterations: usize,
}

/// Trains a C-SVM on the rows of `x` with class labels 0/1 (class 1 is the positive class).
///
/// Errors: invalid parameters, a label other than 0 or 1, only one class present, a
/// non-finite feature, more than [`MAX_TRAIN_ROWS`] rows, kernel values that overflow, or no
/// convergence within `params.max_iter` pair updates.
pub fn fit(x: ArrayView2<f64>, labels: &[usize], params: &SvmParams) -> Result<KernelSvm> {
    params.validate()?;
    let n = x.nrows();
    if labels.len() != n {
        return Err(Error::invalid(
            "labels",
            format!("{} labels", labels.len()),
            format!("{n} labels (one per row of x)"),
        ));
    }
    if n > MAX_TRAIN_ROWS {
        return Err(Error::invalid(
            "training rows",
            n,
            format!("at most {MAX_TRAIN_ROWS} (the Gram matrix is kept in full)"),
        ));
    }
    if let Some(&l) = labels.iter().find(|&&l| l > 1) {
        return Err(Error::invalid("label", l, "a class index 0 or 1"));
    }
    for class in [0, 1] {
        if !labels.contains(&class) {
            return Err(Error::invalid(
                "labels",
                format!("no example of class {class}"),
                "examples of both classes 0 and 1",
            ));
        }
    }
    if let Some(v) = x.iter().find(|v| !v.is_finite()) {
        return Err(Error::invalid("features", v, "finite numbers"));
    }
    let gram = gram_matrix(&params.kernel, x);
    if let Some(v) = gram.iter().find(|v| !v.is_finite()) {
        return Err(Error::invalid(
            "features",
            format!("a kernel value of {v}"),
            "values small enough that the kernel is finite (standardise them)",
        ));
    }
    let y: Vec<f64> = labels
        .iter()
        .map(|&l| if l == 1 { 1.0 } else { -1.0 })
        .collect();
    let sol = Solver::new(Dual {
        gram: &gram,
        row: (0..n).collect(),
        p: vec![-1.0; n],
        y: y.clone(),
        c: params.c,
    })
    .run(params.tol, params.max_iter)?;

    let support_indices: Vec<usize> = (0..n).filter(|&i| sol.alpha[i] > 0.0).collect();
    let dual_coef: Array1<f64> = support_indices
        .iter()
        .map(|&i| y[i] * sol.alpha[i])
        .collect();
    // W(α) = Σα − ½ αᵀQα, from the Gram matrix rather than the drifting gradient.
    let mut quad = 0.0;
    for (s, &i) in support_indices.iter().enumerate() {
        let row = gram.row(i);
        let inner: f64 = support_indices
            .iter()
            .zip(&dual_coef)
            .map(|(&j, &a)| a * row[j])
            .sum();
        quad += dual_coef[s] * inner;
    }
    let dual_objective = sol.alpha.iter().sum::<f64>() - 0.5 * quad;
    Ok(KernelSvm {
        kernel: params.kernel,
        c: params.c,
        support_vectors: x.select(Axis(0), &support_indices),
        support_indices,
        dual_coef,
        bias: -sol.rho,
        dual_objective,
        iterations: sol.iterations,
    })
}

impl KernelSvm {
    /// f(x) = Σ_s y_s α_s k(x_s, x) + b for each row of `x`.
    pub fn decision(&self, x: ArrayView2<f64>) -> Result<Array1<f64>> {
        let d = self.support_vectors.ncols();
        if x.ncols() != d {
            return Err(Error::invalid(
                "x",
                format!("{} columns", x.ncols()),
                format!("{d} columns (as in training)"),
            ));
        }
        let mut out = Array1::zeros(x.nrows());
        Zip::from(&mut out).and(x.rows()).par_for_each(|f, row| {
            let s: f64 = self
                .support_vectors
                .rows()
                .into_iter()
                .zip(&self.dual_coef)
                .map(|(sv, &a)| a * self.kernel.eval(sv, row))
                .sum();
            *f = s + self.bias;
        });
        Ok(out)
    }

    /// Class 1 where f(x) > 0, else class 0 (scikit-learn's rule).
    pub fn predict(&self, x: ArrayView2<f64>) -> Result<Vec<usize>> {
        Ok(self
            .decision(x)?
            .iter()
            .map(|&f| usize::from(f > 0.0))
            .collect())
    }

    /// The fraction of rows of `x` whose predicted class is the label (0 for no rows).
    pub fn accuracy(&self, x: ArrayView2<f64>, labels: &[usize]) -> Result<f64> {
        if labels.len() != x.nrows() {
            return Err(Error::invalid(
                "labels",
                format!("{} labels", labels.len()),
                format!("{} labels (one per row of x)", x.nrows()),
            ));
        }
        if labels.is_empty() {
            return Ok(0.0);
        }
        let predicted = self.predict(x)?;
        let right = predicted.iter().zip(labels).filter(|(p, l)| p == l).count();
        Ok(right as f64 / labels.len() as f64)
    }

    /// The number of support vectors (α_i > 0).
    pub fn n_support(&self) -> usize {
        self.support_indices.len()
    }

    /// The training rows that are support vectors, increasing.
    pub fn support_indices(&self) -> &[usize] {
        &self.support_indices
    }

    /// y_s α_s for each support vector (scikit-learn's `dual_coef_`).
    pub fn dual_coef(&self) -> ArrayView1<'_, f64> {
        self.dual_coef.view()
    }

    /// The bias b (scikit-learn's `intercept_`).
    pub fn bias(&self) -> f64 {
        self.bias
    }

    /// W(α) = Σα − ½ αᵀQα at the solution (the maximised dual; ≥ 0).
    pub fn dual_objective(&self) -> f64 {
        self.dual_objective
    }

    /// The number of pair updates SMO made.
    pub fn iterations(&self) -> usize {
        self.iterations
    }

    pub fn kernel(&self) -> SvmKernel {
        self.kernel
    }

    pub fn c(&self) -> f64 {
        self.c
    }
}

/// K_ij = k(x_i, x_j): the upper triangle row by row in parallel, then mirrored.
fn gram_matrix(kernel: &SvmKernel, x: ArrayView2<f64>) -> Array2<f64> {
    let n = x.nrows();
    let mut gram = Array2::zeros((n, n));
    Zip::indexed(gram.rows_mut())
        .and(x.rows())
        .par_for_each(|i, mut out, xi| {
            for j in i..n {
                out[j] = kernel.eval(xi, x.row(j));
            }
        });
    for i in 0..n {
        for j in 0..i {
            gram[[i, j]] = gram[[j, i]];
        }
    }
    gram
}
