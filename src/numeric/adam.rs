//! Adam (Kingma & Ba 2015) with projection on a box after each step: rows are points, column j
//! is clamped to [lo[j], hi[j]].

use crate::error::Result;
use ndarray::{Array2, ArrayView2, Zip};

/// `steps` Adam steps of learning rate `lr` from `z`, each followed by clamping column j to
/// [`lo[j]`, `hi[j]`]; `gradient(z, grad)` writes the objective's gradient at z into `grad`.
/// β1 = 0.9, β2 = 0.999, ε = 1e-8, bias-corrected.
pub fn adam_projected(
    mut z: Array2<f64>,
    steps: usize,
    lr: f64,
    lo: &[f64],
    hi: &[f64],
    mut gradient: impl FnMut(ArrayView2<f64>, &mut Array2<f64>) -> Result<()>,
) -> Result<Array2<f64>> {
    const BETA1: f64 = 0.9;
    const BETA2: f64 = 0.999;
    const EPS: f64 = 1e-8;
    let mut grad = Array2::zeros(z.raw_dim());
    let mut m = Array2::<f64>::zeros(z.raw_dim());
    let mut v = Array2::<f64>::zeros(z.raw_dim());
    let (mut c1, mut c2) = (1.0, 1.0);
    for _ in 0..steps {
        gradient(z.view(), &mut grad)?;
        c1 *= BETA1;
        c2 *= BETA2;
        let step = lr / (1.0 - c1);
        let root_c2 = (1.0 - c2).sqrt();
        Zip::indexed(&mut z)
            .and(&grad)
            .and(&mut m)
            .and(&mut v)
            .for_each(|(_, j), z, &g, m, v| {
                *m = BETA1 * *m + (1.0 - BETA1) * g;
                *v = BETA2 * *v + (1.0 - BETA2) * g * g;
                *z = (*z - step * *m / (v.sqrt() / root_c2 + EPS)).clamp(lo[j], hi[j]);
            });
    }
    Ok(z)
}
