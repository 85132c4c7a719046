//! Composition of pure-DP mechanisms: optimal (Kairouz–Oh–Viswanath 2015, Theorem 3.3; the
//! worst case is k-fold randomized response, so this trade-off is exact and tight) and the
//! advanced composition theorem of Dwork–Rothblum–Vadhan (2010), which papers quote.

use super::convert::DpBound;
use crate::error::{Error, Range, Result};

/// δ(ε_total) of k-fold composition of ε-DP mechanisms:
/// Σ_l C(k,l) p^{k−l}(1−p)^l · max(0, 1 − e^{ε_total − (k−2l)ε}), p = e^ε/(1+e^ε)
/// (the privacy-loss distribution of k-fold randomized response), rounded up by 1e-12 relative.
pub fn kov_delta(epsilon: f64, k: u64, epsilon_total: f64) -> Result<f64> {
    let eps = Range::Positive.check("epsilon", epsilon)?;
    let total = Range::NonNegative.check("epsilon_total", epsilon_total)?;
    if k == 0 {
        return Err(Error::invalid("k", 0, "an integer >= 1"));
    }
    let kf = k as f64;
    let ln_p = -libm::log1p(libm::exp(-eps));
    let ln_1mp = ln_p - eps;
    let mut delta = 0.0;
    for l in 0..=k {
        let loss = (kf - 2.0 * l as f64) * eps;
        if loss <= total {
            break; // losses decrease with l
        }
        let lf = l as f64;
        let ln_binom =
            libm::lgamma(kf + 1.0) - libm::lgamma(lf + 1.0) - libm::lgamma(kf - lf + 1.0);
        let ln_prob = ln_binom + (kf - lf) * ln_p + lf * ln_1mp;
        delta += libm::exp(ln_prob) * -libm::expm1(total - loss);
    }
    Ok((delta * (1.0 + 1e-12)).min(1.0))
}

/// The smallest ε_total with δ(ε_total) ≤ δ for k-fold composition of ε-DP (by bisection on the
/// decreasing δ(ε_total); the returned value was checked).
pub fn kov_epsilon(epsilon: f64, k: u64, delta: f64) -> Result<DpBound> {
    let delta = Range::OpenUnit.check("delta", delta)?;
    let meets = |t: f64| {
        kov_delta(epsilon, k, t)
            .map(|d| d <= delta)
            .unwrap_or(false)
    };
    let hi = epsilon * k as f64; // δ(kε) = 0
    if meets(0.0) {
        return Ok(DpBound {
            epsilon: 0.0,
            delta,
            order: None,
        });
    }
    let total = crate::numeric::bisect_boundary(meets, 0.0, hi, 1e-12);
    Ok(DpBound {
        epsilon: total,
        delta,
        order: None,
    })
}

/// Advanced composition (Dwork–Rothblum–Vadhan) of k ε-DP mechanisms, adaptively chosen:
/// (ε√(2k ln(1/δ′)) + kε(e^ε − 1), δ′)-DP, or basic composition's (kε, 0) when that is
/// smaller. Rounded up by 1e-12 relative.
pub fn advanced_epsilon(epsilon: f64, k: u64, delta_prime: f64) -> Result<DpBound> {
    let eps = Range::Positive.check("epsilon", epsilon)?;
    if k == 0 {
        return Err(Error::invalid("k", 0, "an integer >= 1"));
    }
    let kf = k as f64;
    let basic = kf * eps;
    if delta_prime == 0.0 {
        return Ok(DpBound {
            epsilon: basic,
            delta: 0.0,
            order: None,
        });
    }
    let delta_prime = Range::OpenUnit.check("delta_prime", delta_prime)?;
    let advanced = (eps * (2.0 * kf * libm::log(1.0 / delta_prime)).sqrt()
        + basic * libm::expm1(eps))
        * (1.0 + 1e-12);
    Ok(if advanced < basic {
        DpBound {
            epsilon: advanced,
            delta: delta_prime,
            order: None,
        }
    } else {
        DpBound {
            epsilon: basic,
            delta: 0.0,
            order: None,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// δ(ε_total) by enumerating all 2^k output sequences of k-fold randomized response.
    fn brute_force(eps: f64, k: u32, total: f64) -> f64 {
        let p = libm::exp(eps) / (1.0 + libm::exp(eps));
        (0..(1u64 << k))
            .map(|bits| {
                let ones = bits.count_ones() as i32;
                let zeros = k as i32 - ones;
                let pp = p.powi(ones) * (1.0 - p).powi(zeros);
                let qq = (1.0 - p).powi(ones) * p.powi(zeros);
                (pp - libm::exp(total) * qq).max(0.0)
            })
            .sum()
    }

    #[test]
    fn matches_brute_force_enumeration() {
        for &(eps, k) in &[(0.3, 1u32), (0.5, 5), (1.0, 8), (0.1, 12)] {
            for total in [0.0, 0.2, 0.7, 1.5, 3.0] {
                let exact = brute_force(eps, k, total);
                let ours = kov_delta(eps, u64::from(k), total).unwrap();
                assert!(
                    ours >= exact && ours - exact < 1e-12 + 1e-10 * exact,
                    "ε={eps} k={k} t={total}: {ours} vs {exact}"
                );
            }
        }
    }

    #[test]
    fn epsilon_for_delta_is_checked_and_beats_basic_composition() {
        let b = kov_epsilon(0.1, 100, 1e-6).unwrap();
        assert!(kov_delta(0.1, 100, b.epsilon).unwrap() <= 1e-6);
        assert!(b.epsilon < 10.0 && b.epsilon > 1.0, "{}", b.epsilon);
        assert_eq!(kov_epsilon(1.0, 1, 1e-6).unwrap().epsilon.round(), 1.0);
        assert!(kov_delta(1.0, 0, 1.0).is_err() && kov_delta(-1.0, 3, 1.0).is_err());
    }

    /// Spec 003 §4.4(f): the advanced values, the raw 2.2915 losing to basic 1.9 at T = 19,
    /// and the naive |S| = 1000, ε = 0.5 row of Table 1.
    #[test]
    fn advanced_composition_matches_spec_003() {
        let adv = |e, k, d| advanced_epsilon(e, k, d).unwrap();
        assert!((adv(0.1, 199, 1e-5).epsilon - 8.862).abs() < 1e-3);
        assert!((adv(0.1, 99, 1e-5).epsilon - 5.816).abs() < 1e-3);
        assert!((adv(0.01, 199, 1e-5).epsilon - 0.6969).abs() < 1e-3);
        assert!((adv(0.1, 199, 1e-6).epsilon - 9.508).abs() < 1e-3);
        assert!((adv(0.5, 1000, 1e-5).epsilon - 400.232).abs() < 1e-3);
        let short = adv(0.1, 19, 1e-5);
        assert_eq!((short.epsilon, short.delta), (1.9000000000000001, 0.0));
        assert_eq!(adv(0.1, 5, 0.0).epsilon, 0.5);
        assert!(advanced_epsilon(0.1, 0, 1e-5).is_err() && advanced_epsilon(0.1, 3, 1.0).is_err());
    }
}
