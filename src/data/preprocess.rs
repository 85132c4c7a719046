//! Preprocessing every model uses: per-column standardisation (fitted on the training part
//! only, so no statistic of the validation or test rows leaks into training) and per-row norm
//! clipping (data-independent, so it costs no privacy).

use super::Dataset;
use ndarray::{Array1, Array2, ArrayView1, Axis};

/// Per-column affine map x ↦ (x − mean) / sd.
#[derive(Clone, Debug, PartialEq)]
pub struct Standardiser {
    pub mean: Array1<f64>,
    /// Population standard deviation (divide by n, as scikit-learn's `StandardScaler`); 1 for
    /// a constant column, so it maps to 0.
    pub sd: Array1<f64>,
}

impl Standardiser {
    /// Column means and standard deviations of `x` (two passes). A column whose values are all
    /// equal gets that value as its mean and sd 1, so it maps to exactly 0; a matrix with no
    /// rows gives the identity map.
    pub fn fit(x: &Array2<f64>) -> Standardiser {
        let (n, d) = x.dim();
        let mut mean = Array1::zeros(d);
        let mut sd = Array1::ones(d);
        if n == 0 {
            return Standardiser { mean, sd };
        }
        for (j, col) in x.axis_iter(Axis(1)).enumerate() {
            let first = col[0];
            if col.iter().all(|&v| v == first) {
                mean[j] = first;
                continue;
            }
            let m = col.sum() / n as f64;
            let var = col.iter().map(|&v| (v - m) * (v - m)).sum::<f64>() / n as f64;
            mean[j] = m;
            sd[j] = var.sqrt();
        }
        Standardiser { mean, sd }
    }

    /// (x − mean) / sd, column by column. Panics if `x` has a different number of columns
    /// than the matrix the map was fitted on (a programming error, not a data error).
    pub fn apply(&self, x: &Array2<f64>) -> Array2<f64> {
        assert_eq!(
            x.ncols(),
            self.mean.len(),
            "Standardiser fitted on {} columns applied to {}",
            self.mean.len(),
            x.ncols()
        );
        let mut out = x.clone();
        for mut row in out.axis_iter_mut(Axis(0)) {
            for ((v, &m), &s) in row.iter_mut().zip(&self.mean).zip(&self.sd) {
                *v = (*v - m) / s;
            }
        }
        out
    }
}

impl Dataset {
    /// The same examples with standardised features (fit `s` on the training part).
    pub fn standardised(&self, s: &Standardiser) -> Dataset {
        Dataset {
            name: self.name.clone(),
            x: s.apply(&self.x),
            target: self.target.clone(),
        }
    }
}

/// Scales every row whose Euclidean norm exceeds `max_norm` down onto that norm; shorter rows
/// are left unchanged. Afterwards every row's norm is at most `max_norm`, exactly as computed
/// here: a row that rounding leaves an ulp too long is shrunk further. Panics unless
/// `max_norm > 0` (callers check it as a parameter first).
pub fn clip_rows(x: &mut Array2<f64>, max_norm: f64) {
    assert!(
        max_norm > 0.0,
        "clip_rows: max_norm = {max_norm} must be > 0"
    );
    for mut row in x.axis_iter_mut(Axis(0)) {
        let length = norm(row.view());
        if length > max_norm {
            row *= max_norm / length;
            // Each pass squares the factor, so even subnormal entries shrink and it ends.
            let mut factor = 1.0 - f64::EPSILON;
            while norm(row.view()) > max_norm {
                row *= factor;
                factor *= factor;
            }
        }
    }
}

/// The Euclidean norm, scaled by the largest entry so huge or tiny entries neither overflow
/// nor underflow.
fn norm(row: ArrayView1<f64>) -> f64 {
    let largest = row.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    if largest == 0.0 || !largest.is_finite() {
        return largest;
    }
    largest
        * row
            .iter()
            .map(|v| (v / largest).powi(2))
            .sum::<f64>()
            .sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    #[test]
    fn fit_matches_a_hand_computation() {
        let x = array![[1.0, 5.0], [3.0, 5.0], [8.0, 5.0]];
        let s = Standardiser::fit(&x);
        // Column 0: mean 4, variance (9 + 1 + 16) / 3.
        assert_eq!(s.mean, array![4.0, 5.0]);
        assert!((s.sd[0] - (26.0f64 / 3.0).sqrt()).abs() < 1e-15);
        assert_eq!(s.sd[1], 1.0);
        let empty = Standardiser::fit(&Array2::zeros((0, 2)));
        assert_eq!(empty.apply(&x), x);
    }

    #[test]
    fn norm_survives_extreme_entries() {
        let close = |a: f64, b: f64| (a / b - 1.0).abs() < 4.0 * f64::EPSILON;
        assert!(close(norm(array![3e200, 4e200].view()), 5e200));
        assert!(close(norm(array![3e-200, -4e-200].view()), 5e-200));
        assert_eq!(norm(array![0.0, 0.0].view()), 0.0);
        let mut x = array![[3e200, 4e200], [1e-310, 0.0]];
        clip_rows(&mut x, 1.0);
        assert!((x[[0, 0]] - 0.6).abs() < 1e-15 && (x[[0, 1]] - 0.8).abs() < 1e-15);
        assert_eq!(x[[1, 0]], 1e-310);
        let mut tiny = array![[1e-310, 1e-310]];
        clip_rows(&mut tiny, 1e-311);
        assert!(norm(tiny.row(0)) <= 1e-311 && tiny[[0, 0]] > 0.0);
    }
}
