//! AboveThreshold (Dwork–Roth, the sparse vector technique) as propose-test runs it (spec 003
//! §1.3): one noisy threshold, one fresh Laplace draw per query, the first query above wins.
//! One pass is ε0-DP for queries of sensitivity 1/k with these scales.

use crate::rng::laplace;
use rand::RngCore;

/// The Laplace scales of one ε0-DP AboveThreshold pass on queries of sensitivity 1/k.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PassNoise {
    /// 2/(kε0)
    pub threshold: f64,
    /// 4/(kε0)
    pub query: f64,
}

impl PassNoise {
    pub fn new(shards: usize, eps0: f64) -> Self {
        let base = 1.0 / (shards as f64 * eps0);
        PassNoise {
            threshold: 2.0 * base,
            query: 4.0 * base,
        }
    }
}

/// One AboveThreshold pass (spec 003 §1.3): τ = level + Lap(threshold scale); candidates in
/// `order` each get a fresh Lap(query scale) draw; the first with u_j + γ_j ≥ τ wins.
pub fn above_threshold(
    utilities: &[f64],
    level: f64,
    noise: PassNoise,
    order: &[usize],
    rng: &mut dyn RngCore,
) -> Option<usize> {
    let tau = level + laplace(rng, noise.threshold);
    order
        .iter()
        .copied()
        .find(|&j| utilities[j] + laplace(rng, noise.query) >= tau)
}
