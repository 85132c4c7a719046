//! The exponential mechanism (McSherry–Talwar): ε-DP selection of an index with probability
//! ∝ exp(ε·s_i/(2Δ)) for scores of sensitivity Δ. Private GP-UCB's final choice (spec 002
//! Algorithm 1) and the suites that replay it use these two functions, and nothing else draws it.

use crate::error::{Error, Range, Result};
use rand::{Rng, RngCore};

/// The exponential mechanism for argmax_i scores[i] (McSherry–Talwar; spec 002 §1.5, Algorithm 1
/// line 12): ln P(i) = ε·s_i/(2Δ) − ln Σ_j exp(ε·s_j/(2Δ)), normalised with log-sum-exp.
///
/// For Algorithm 1 the scores are μ_T on the grid and Δ = Δ_λ (`GpUcbConfig::delta_lambda`).
/// The exponents are formed as (s_i − max s)·ε/(2Δ), so huge scores or a huge ε/Δ cannot
/// overflow; a probability that underflows is returned as ln 0 = −∞. Errors on an empty score
/// vector, a non-finite score (naming its index), ε or Δ not finite and > 0.
pub fn exp_mech_log_weights(scores: &[f64], epsilon: f64, sensitivity: f64) -> Result<Vec<f64>> {
    Range::Positive.check("epsilon", epsilon)?;
    Range::Positive.check("sensitivity", sensitivity)?;
    if scores.is_empty() {
        return Err(Error::invalid("scores", "[]", "a non-empty list of scores"));
    }
    if let Some((i, s)) = scores.iter().enumerate().find(|(_, s)| !s.is_finite()) {
        return Err(Error::invalid(
            "scores",
            format!("{s} at index {i}"),
            "finite numbers (one score per candidate)",
        ));
    }
    let max = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    // ε/(2Δ); may overflow to +∞ (the argmax limit), which the exponents below handle.
    let factor = 0.5 * (epsilon / sensitivity);
    let exponents: Vec<f64> = scores
        .iter()
        .map(|&s| {
            let diff = s - max; // ≤ 0; −∞ only when the scores span more than f64's range
            if diff == 0.0 {
                0.0
            } else if diff.is_finite() {
                diff * factor
            } else {
                s * factor - max * factor
            }
        })
        .collect();
    // The largest exponent is exactly 0, so the sum lies in [1, N] and its log is finite.
    let log_sum = libm::log(exponents.iter().map(|z| libm::exp(*z)).sum::<f64>());
    Ok(exponents.into_iter().map(|z| z - log_sum).collect())
}

/// An index drawn with probability exp(log_w[i]) (normalised log-weights) by the inverse CDF
/// of one uniform draw; a rounding shortfall of the total lands on the last positive weight.
pub fn sample_log_weights(log_w: &[f64], rng: &mut dyn RngCore) -> usize {
    let u: f64 = rng.random();
    let mut cum = 0.0;
    let mut last_positive = 0;
    for (i, lw) in log_w.iter().enumerate() {
        let w = libm::exp(*lw);
        if w > 0.0 {
            last_positive = i;
        }
        cum += w;
        if u < cum {
            return i;
        }
    }
    last_positive
}
