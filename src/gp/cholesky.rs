//! The one home of the crate's Cholesky factorisations: column-major (Fortran-layout) buffers
//! that LAPACK reads without copies, the factor L with Lᵀ, triangular solves, and the one
//! jitter policy ([`Jitter`], applied by [`cholesky_with_jitter`]) for nearly singular matrices.
//!
//! Every factorisation is LAPACK's potrf on the lower triangle of a column-major matrix, so a
//! matrix factorises to the same bits whichever caller asks.

use crate::error::{Error, Result};
use ndarray::{Array2, ArrayView2, ShapeBuilder};
use ndarray_linalg::{Diag, Lapack, MatrixLayout, UPLO};

/// What to add to the diagonal of a symmetric matrix, relative to a scale (the kernel's signal
/// variance), and whether to retry with more when the factorisation fails: the one jitter
/// policy of the crate.
///
/// The first attempt adds `first`·scale (0: the matrix as given). An escalating policy then
/// retries with each rung of [`Jitter::LADDER`] above `first` in turn (×scale), up to
/// 1e-4·scale, before giving up; a fixed policy ([`Jitter::NONE`]) never retries. The first
/// attempt is the only one whose numbers any committed result depends on; a retry happens only
/// for a matrix that is not numerically positive definite as given.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Jitter {
    first: f64,
    escalate: bool,
}

impl Jitter {
    /// The retries of an escalating policy, relative to the scale.
    pub const LADDER: [f64; 7] = [1e-10, 1e-9, 1e-8, 1e-7, 1e-6, 1e-5, 1e-4];

    /// Nothing added, no retry: for matrices whose diagonal already carries a declared jitter
    /// (DP-GIBO's ν = σ² + jitter, fixed before any data is seen).
    pub const NONE: Jitter = Jitter {
        first: 0.0,
        escalate: false,
    };

    /// Starts at `first` (relative to the scale) and escalates up [`Jitter::LADDER`].
    pub const fn escalating(first: f64) -> Jitter {
        Jitter {
            first,
            escalate: true,
        }
    }

    /// The jitters tried, in order, for `scale`.
    pub fn schedule(self, scale: f64) -> Vec<f64> {
        let mut out = vec![self.first * scale];
        if self.escalate {
            out.extend(
                Self::LADDER
                    .iter()
                    .filter(|&&r| r > self.first)
                    .map(|r| r * scale),
            );
        }
        out
    }
}

/// A matrix that stayed not (numerically) positive definite up to the last jitter tried.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NotPositiveDefinite {
    /// The size n of the n × n matrix.
    pub n: usize,
    /// The largest jitter tried (absolute).
    pub jitter: f64,
}

/// The lower Cholesky factor L of the symmetric matrix `matrix()` + jitter·I (column-major,
/// zeros above the diagonal) and the jitter that made it succeed, trying the jitters of
/// `policy` for `scale` in order. Only the lower triangle of the matrix is read. `matrix` is
/// called once per attempt (a failed attempt leaves a partial factor, so the rare retries
/// rebuild the matrix instead of keeping a copy); a matrix that is not column-major is copied
/// into that layout. A factor counts only with a finite, positive diagonal.
pub fn cholesky_with_jitter(
    policy: Jitter,
    scale: f64,
    mut matrix: impl FnMut() -> Array2<f64>,
) -> std::result::Result<(Array2<f64>, f64), NotPositiveDefinite> {
    let mut last = NotPositiveDefinite { n: 0, jitter: 0.0 };
    for jitter in policy.schedule(scale) {
        let mut a = into_f(matrix());
        if jitter != 0.0 {
            a.diag_mut().mapv_inplace(|v| v + jitter);
        }
        if cholesky_in_place(&mut a).is_ok() && a.diag().iter().all(|d| d.is_finite() && *d > 0.0) {
            zero_strict_upper(&mut a);
            return Ok((a, jitter));
        }
        last = NotPositiveDefinite {
            n: a.nrows(),
            jitter,
        };
    }
    Err(last)
}

/// Overwrites the lower triangle of the column-major `a` with its Cholesky factor, one attempt
/// and no jitter (the strict upper triangle is left as it was).
pub(crate) fn cholesky_in_place(
    a: &mut Array2<f64>,
) -> std::result::Result<(), NotPositiveDefinite> {
    let n = a.nrows();
    if n == 0 {
        return Ok(());
    }
    let layout = f_layout(a);
    let data = a.as_slice_memory_order_mut().expect("contiguous");
    <f64 as Lapack>::cholesky(layout, UPLO::Lower, data)
        .map_err(|_| NotPositiveDefinite { n, jitter: 0.0 })
}

fn zero_strict_upper(a: &mut Array2<f64>) {
    for (j, mut col) in a.columns_mut().into_iter().enumerate() {
        col.iter_mut().take(j).for_each(|v| *v = 0.0);
    }
}

pub(crate) fn lapack_error(e: impl std::fmt::Display) -> Error {
    Error::Numerical(format!("linear algebra: {e}"))
}

/// LAPACK's description of a column-major matrix.
fn f_layout(a: &Array2<f64>) -> MatrixLayout {
    debug_assert!(is_f(a));
    MatrixLayout::F {
        col: a.ncols() as i32,
        lda: a.nrows().max(1) as i32,
    }
}

fn is_f(a: &Array2<f64>) -> bool {
    a.t().is_standard_layout()
}

/// A new column-major (Fortran-layout) matrix of zeros: what LAPACK reads without a copy.
pub(crate) fn zeros_f(rows: usize, cols: usize) -> Array2<f64> {
    Array2::zeros((rows, cols).f())
}

/// A column-major copy of `a`.
pub(crate) fn to_f(a: ArrayView2<f64>) -> Array2<f64> {
    let mut out = zeros_f(a.nrows(), a.ncols());
    out.assign(&a);
    out
}

/// `a` itself when column-major, else a column-major copy.
fn into_f(a: Array2<f64>) -> Array2<f64> {
    if is_f(&a) {
        a
    } else {
        to_f(a.view())
    }
}

/// The Cholesky factor L of a symmetric positive definite matrix, and Lᵀ, both column-major.
#[derive(Clone, Debug)]
pub(crate) struct Factor {
    lower: Array2<f64>,
    upper: Array2<f64>,
}

impl Factor {
    /// The factor with lower triangle `lower` (column-major; what is above the diagonal is
    /// ignored).
    pub(crate) fn from_lower(lower: Array2<f64>) -> Self {
        let mut upper = zeros_f(lower.nrows(), lower.nrows());
        upper.assign(&lower.t());
        Factor { lower, upper }
    }

    /// L⁻¹B in place (B column-major).
    pub(crate) fn solve_lower(&self, b: &mut Array2<f64>) -> Result<()> {
        solve_triangular(&self.lower, UPLO::Lower, b)
    }

    /// L⁻ᵀB in place (B column-major).
    pub(crate) fn solve_upper(&self, b: &mut Array2<f64>) -> Result<()> {
        solve_triangular(&self.upper, UPLO::Upper, b)
    }
}

/// A⁻¹B in place for a column-major triangular A (its `uplo` triangle is read) and a
/// column-major B.
pub(crate) fn solve_triangular(a: &Array2<f64>, uplo: UPLO, b: &mut Array2<f64>) -> Result<()> {
    if a.nrows() == 0 || b.ncols() == 0 {
        return Ok(());
    }
    let (la, lb) = (f_layout(a), f_layout(b));
    let a = a.as_slice_memory_order().expect("contiguous");
    let b = b.as_slice_memory_order_mut().expect("contiguous");
    <f64 as Lapack>::solve_triangular(la, lb, uplo, Diag::NonUnit, a, b).map_err(lapack_error)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    #[test]
    fn schedules() {
        assert_eq!(Jitter::NONE.schedule(2.0), vec![0.0]);
        let s = Jitter::escalating(0.0).schedule(2.0);
        assert_eq!(s.len(), 8);
        assert_eq!((s[0], s[1], s[7]), (0.0, 2e-10, 2e-4));
        let s = Jitter::escalating(1e-8).schedule(1.0);
        assert_eq!(s, vec![1e-8, 1e-7, 1e-6, 1e-5, 1e-4]);
        let s = Jitter::escalating(1e-12).schedule(3.0);
        assert_eq!((s[0], s[1], s.len()), (1e-12 * 3.0, 1e-10 * 3.0, 8));
    }

    /// Either layout gives the same factor (its lower triangle read), zeros above; a singular
    /// matrix needs the first rung of the ladder, and a fixed policy reports it.
    #[test]
    fn factorises_with_the_least_jitter_needed() {
        let c = array![[4.0, 2.0], [2.0, 3.0]];
        let (l, j) = cholesky_with_jitter(Jitter::NONE, 1.0, || c.clone()).unwrap();
        let (lf, _) = cholesky_with_jitter(Jitter::NONE, 1.0, || to_f(c.view())).unwrap();
        assert_eq!(j, 0.0);
        assert_eq!(l, lf);
        assert_eq!(l, array![[2.0, 0.0], [1.0, 2f64.sqrt()]]);
        let singular = array![[1.0, 1.0], [1.0, 1.0]];
        let (l, j) =
            cholesky_with_jitter(Jitter::escalating(0.0), 1.0, || singular.clone()).unwrap();
        assert_eq!(j, 1e-10);
        assert!((l.dot(&l.t()) - &singular).iter().all(|e| e.abs() < 1e-9));
        let e = cholesky_with_jitter(Jitter::NONE, 1.0, || singular.clone()).unwrap_err();
        assert_eq!(e, NotPositiveDefinite { n: 2, jitter: 0.0 });
        let minus = array![[-1.0]];
        let e = cholesky_with_jitter(Jitter::escalating(0.0), 1.0, || minus.clone()).unwrap_err();
        assert_eq!(e.jitter, 1e-4);
    }
}
